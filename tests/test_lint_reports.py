"""`syncscope.render.sarif` and `.github` are generic: any records with rule_id, message,
level, site and fingerprint. Checked here with runtime-style records (kinds, not rule codes)."""

from __future__ import annotations

import io
import json
import os
from dataclasses import dataclass

import jsonschema

from syncscope.render.github import format_github, write_github
from syncscope.render.sarif import to_sarif, write_sarif
from syncscope.site import Site

SCHEMA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sarif-schema-2.1.0.json")


@dataclass(frozen=True)
class RuntimeRecord:
    site: Site
    rule_id: str
    message: str
    level: str
    fingerprint: str


def _records():
    a = Site("engine/step.py", 42, "Runner.step", "item", "n = x.item()")
    b = Site("engine/step.py", 7, "<module>", "sync", "")
    return [
        RuntimeRecord(a, "item", "blocked 12.5 ms: .item(), 100% of this step's waits", "error", a.fingerprint()),
        RuntimeRecord(b, "sync", "line one\nline two, 50% done: ok", "note", b.fingerprint()),
    ]


def test_sarif_from_runtime_records_is_valid():
    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    log = to_sarif(_records(), rules=[{"id": "item", "name": "item-read", "short": "a .item() read", "level": "error"}],
                   tool_version="1.2.3", root_uri="file:///repo")
    jsonschema.Draft4Validator(schema).validate(log)
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["item", "sync"]  # unknown kinds get a rule
    assert [r["ruleIndex"] for r in run["results"]] == [0, 1]
    assert run["results"][1]["level"] == "note"
    assert run["results"][0]["partialFingerprints"] == {"syncscope/v1": _records()[0].fingerprint}
    assert run["results"][0]["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == "Runner.step"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file:///repo/"
    stream = io.StringIO()
    write_sarif(_records(), stream)
    assert json.loads(stream.getvalue())["version"] == "2.1.0"


def test_github_commands_escape_data_and_properties():
    first, second = _records()
    assert format_github(first) == ("::error file=engine/step.py,line=42,title=item::"
                                    "item blocked 12.5 ms: .item(), 100% of this step's waits".replace("%", "%25"))
    line = format_github(second)
    assert line.startswith("::notice file=engine/step.py,line=7,title=sync::")
    assert "%0A" in line and "\n" not in line
    stream = io.StringIO()
    write_github(_records(), stream)
    assert stream.getvalue().count("\n") == 2
