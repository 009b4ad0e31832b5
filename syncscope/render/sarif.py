"""SARIF 2.1.0 output, shared by the linter and the runtime reports.

Takes "result records": any objects with `rule_id`, `message`, `level` ("error", "warning",
"note"), `site` (a `syncscope.site.Site`) and `fingerprint`; an optional `column` attribute is
used when present. Rules are described by plain dicts so this module needs nothing from either
side of the project. `partialFingerprints` carries our edit-stable fingerprint, so GitHub code
scanning tracks a finding across unrelated edits instead of computing its own line hash.
"""

from __future__ import annotations

import json
from typing import IO, Iterable

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "syncscope/v1"
_LEVELS = {"error": "error", "warning": "warning", "note": "note", "info": "note", "none": "none"}


def to_sarif(results: Iterable, *, rules: list[dict] | None = None, tool_name: str = "syncscope",
             tool_version: str = "0.0.0", information_uri: str | None = None,
             root_uri: str | None = None) -> dict:
    """A SARIF log (as a dict) with one run. Each rule dict may hold: id (required), name,
    short (one line), full (longer text), help_uri, level."""
    results = list(results)
    rule_list = list(rules or [])
    known = {rule["id"] for rule in rule_list}
    for record in results:  # every result must point at a rule the run describes
        if record.rule_id not in known:
            known.add(record.rule_id)
            rule_list.append({"id": record.rule_id})
    index = {rule["id"]: i for i, rule in enumerate(rule_list)}

    driver: dict = {"name": tool_name, "version": tool_version, "rules": [_rule(r) for r in rule_list]}
    if information_uri:
        driver["informationUri"] = information_uri
    run: dict = {
        "tool": {"driver": driver},
        "results": [_result(record, index[record.rule_id]) for record in results],
        "columnKind": "unicodeCodePoints",
    }
    if root_uri:
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": root_uri if root_uri.endswith("/") else root_uri + "/"}}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def write_sarif(results: Iterable, stream: IO[str], **options) -> None:
    json.dump(to_sarif(results, **options), stream, indent=2)
    stream.write("\n")


def _rule(rule: dict) -> dict:
    out: dict = {"id": rule["id"]}
    if rule.get("name"):
        out["name"] = rule["name"]
    if rule.get("short"):
        out["shortDescription"] = {"text": rule["short"]}
    if rule.get("full"):
        out["fullDescription"] = {"text": rule["full"]}
    if rule.get("help_uri"):
        out["helpUri"] = rule["help_uri"]
    if rule.get("level"):
        out["defaultConfiguration"] = {"level": _LEVELS.get(rule["level"], "warning")}
    return out


def _result(record, rule_index: int) -> dict:
    site = record.site
    region: dict = {"startLine": max(1, int(site.line))}
    column = getattr(record, "column", None)
    if column:
        region["startColumn"] = max(1, int(column))
    if site.source:
        region["snippet"] = {"text": site.source}
    location: dict = {
        "physicalLocation": {
            "artifactLocation": {"uri": site.path, "uriBaseId": "%SRCROOT%"},
            "region": region,
        }
    }
    if site.function and site.function != "<module>":
        location["logicalLocations"] = [{"fullyQualifiedName": site.function, "kind": "function"}]
    result = {
        "ruleId": record.rule_id,
        "ruleIndex": rule_index,
        "level": _LEVELS.get(record.level, "warning"),
        "message": {"text": record.message},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT_KEY: record.fingerprint},
    }
    fixes = getattr(record, "fixes", None)
    if fixes:  # the linter's `fix` objects: a description and the text replacement
        result["fixes"] = fixes
    chain = getattr(record, "chain", ())
    if chain:  # whole-program findings: the calls down to the sync, as GitHub draws them
        steps = [_step_location(path, line, function, note, index)
                 for index, (path, line, function, note) in enumerate(chain, start=1)]
        result["relatedLocations"] = steps[1:]
        result["codeFlows"] = [{"threadFlows": [{"locations": [
            {"location": {k: v for k, v in step.items() if k != "id"}, "nestingLevel": depth}
            for depth, step in enumerate(steps)]}]}]
    properties = {}
    per_step = getattr(record, "per_step", ())
    if per_step:  # lint findings: the per-step root that reaches the line (syncscope/lint/reachability.py)
        properties["perStep"] = [{"function": f, "path": p, "line": line} for f, p, line in per_step]
    if getattr(record, "cold", None):
        properties["cold"] = record.cold
    if getattr(record, "accepted", None):  # lint: in a block that accepts its syncs
        properties["accepted"] = record.accepted
    if properties:
        result["properties"] = properties
    return result


def _step_location(path: str, line: int, function: str, note: str, index: int) -> dict:
    return {
        "id": index,
        "physicalLocation": {"artifactLocation": {"uri": path, "uriBaseId": "%SRCROOT%"},
                             "region": {"startLine": max(1, int(line))}},
        "message": {"text": f"{function}: {note}"},
    }
