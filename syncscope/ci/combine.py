"""`syncscope combine`: merge the reports of several processes (workers, torchrun ranks) into one.

Nothing is lost and nothing counted twice: every site count, blocked time and event of every input
reaches the output, and an input whose process is already part of another input (the same report
given twice, or a combined report plus one of its parts) is refused rather than added again.
Each merged site keeps its per-process counts (`processes`), so "which rank synced" survives.

Standard library only.
"""

from __future__ import annotations

import datetime
import glob
import json
import os
from dataclasses import dataclass

from syncscope.atomic import write_json_atomic
from syncscope.report.aggregate import assign_fingerprints
from syncscope.report.schema import Report, ReportError, SiteStats
from syncscope.report.status import of_report, worst

DEFAULT_PATTERN = "syncscope-report*.json"


class CombineError(ValueError):
    pass


@dataclass(frozen=True)
class Part:
    """One process whose events an input holds."""

    host: str | None
    pid: int | None
    rank: int | None
    created: str | None
    report: str
    status: str | None = None  # how this process's run ended (report/status.py)

    @property
    def identity(self) -> tuple:
        # The report path is the identity only when a report cannot tell its process.
        if self.pid is None:
            return ("path", os.path.abspath(self.report))
        return (self.host, self.pid, self.created)

    def to_json(self) -> dict:
        return {"host": self.host, "pid": self.pid, "rank": self.rank, "created": self.created, "report": self.report,
                "status": self.status}


def _parts(data: dict, path: str) -> list[Part]:
    nested = data.get("combined_from")
    if isinstance(nested, list) and nested:
        return [Part(p.get("host"), p.get("pid"), p.get("rank"), p.get("created"), p.get("report") or path,
                     of_report(p).status if "status" in p else of_report(data).status) for p in nested]
    return [Part(data.get("host"), data.get("pid"), data.get("rank"), data.get("created"), path, of_report(data).status)]


def _load(path: str) -> tuple[dict, Report]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return data, Report.from_json(data, origin=path)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CombineError(f"{path}: cannot read report ({exc})") from None
    except ReportError as exc:
        raise CombineError(str(exc)) from None


def discover(paths: list[str], output: str | None) -> list[str]:
    """The report files to merge: given files, the reports inside given directories, or (nothing
    given) `syncscope-report*.json` here. The output file itself is never an input."""
    out = os.path.abspath(output) if output else None
    found: list[str] = []
    for path in paths or [DEFAULT_PATTERN]:
        if os.path.isdir(path):
            found.extend(sorted(glob.glob(os.path.join(path, "*.json"))))
        elif any(c in path for c in "*?["):
            found.extend(sorted(glob.glob(path)))
        else:
            found.append(path)
    unique, seen = [], {out}
    for path in found:
        absolute = os.path.abspath(path)
        if absolute not in seen:
            seen.add(absolute)
            unique.append(path)
    if not unique:
        raise CombineError(f"no reports to combine (looked for {', '.join(paths or [DEFAULT_PATTERN])})")
    return unique


def _site_key(s: SiteStats) -> tuple:
    return (s.path, s.line, s.kind, s.in_scope, s.allowed)


def _merge_into(target: SiteStats, s: SiteStats) -> None:
    target.count += s.count
    target.blocked_ns += s.blocked_ns
    target.measured += s.measured
    target.did_not_block += s.did_not_block
    if s.bubble_count is not None:  # bubble windows (issue 11): counts and idle time add up
        both = target.bubble_count is not None
        target.bubble_count = (target.bubble_count or 0) + s.bubble_count
        target.bubble_ns = (target.bubble_ns or 0) + (s.bubble_ns or 0)
        # Each process had a window of its own: a share of one of them says nothing of the sum.
        target.bubble_share = None if both else s.bubble_share
    target.apis.extend(a for a in s.apis if a not in target.apis)
    target.regions.extend(r for r in s.regions if r not in target.regions)
    target.related = target.related or s.related
    target.allow_reason = target.allow_reason or s.allow_reason


def combine(paths: list[str]) -> dict:
    """Merge the reports at `paths` into one report (as JSON data, ready to write)."""
    inputs = [(path, *_load(path)) for path in paths]
    parts: list[Part] = []
    seen: dict[tuple, str] = {}
    for path, data, _ in inputs:
        for part in _parts(data, path):
            if part.identity in seen:
                raise CombineError(
                    f"{path}: holds the events of process {part.host}:{part.pid} already in {seen[part.identity]}; "
                    "combining it again would count them twice"
                )
            seen[part.identity] = path
            parts.append(part)

    merged: dict[tuple, SiteStats] = {}
    processes: dict[tuple, list[dict]] = {}
    remapped_events: list[tuple[tuple, dict]] = []
    truncated = 0
    errors: dict[tuple, int] = {}  # (where, error) -> count over every process
    for path, data, report in inputs:
        own = _parts(data, path)
        raw_sites = data["sites"]
        keys = []
        for raw, s in zip(raw_sites, report.sites):
            key = _site_key(s)
            keys.append(key)
            if key in merged:
                _merge_into(merged[key], s)
            else:
                merged[key] = s
            # An input that was itself combined already says which process had how many.
            per_process = raw.get("processes") or [{"host": own[0].host, "pid": own[0].pid, "rank": own[0].rank, "count": s.count}]
            processes.setdefault(key, []).extend(per_process)
        for event in report.events:
            event = dict(event)
            try:
                key = keys[event["site"]]
            except (KeyError, IndexError, TypeError):
                raise CombineError(f"{path}: event refers to a site the report does not have ({event.get('site')!r})") from None
            if len(own) == 1:  # a single-process report: say which process the event was in
                event.setdefault("host", own[0].host)
                event.setdefault("rank", own[0].rank)
            remapped_events.append((key, event))
        truncated += report.events_truncated
        for entry in report.errors:
            key = (str(entry.get("where", "")), str(entry.get("error", "")))
            count = entry.get("count")
            errors[key] = errors.get(key, 0) + (count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1)

    sites = assign_fingerprints(list(merged.values()))
    index = {_site_key(s): i for i, s in enumerate(sites)}
    events = []
    for key, event in remapped_events:
        event["site"] = index[key]
        events.append(event)
    devices = sorted({str(data.get("device")) for _, data, _ in inputs})
    meta = {
        "tool": inputs[0][1].get("tool"),
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": devices[0] if len(devices) == 1 else "mixed",
        "host": None,
        "pid": None,
        "rank": None,
        "project_root": inputs[0][1].get("project_root"),
        "combined_from": [p.to_json() for p in parts],
        # The worst way any of its processes ended: one rank that failed makes the whole run fail
        # the gate (issue 28); `combined_from` says which.
        **worst(of_report(data) for _, data, _ in inputs).to_meta(),
    }
    merged_errors = [{"where": w, "error": e, "count": n} for (w, e), n in sorted(errors.items())]
    out = Report(sites=sites, events=events, meta=meta, events_truncated=truncated, errors=merged_errors).to_json()
    for s, raw in zip(sites, out["sites"]):
        raw["processes"] = sorted(processes[_site_key(s)], key=lambda p: (p.get("rank") is None, p.get("rank") or 0, p.get("pid") or 0))
    return out


def combine_files(paths: list[str], output: str) -> dict:
    data = combine(paths)
    data["report_path"] = os.path.abspath(output)
    write_json_atomic(output, data)  # temp file + rename: a reader never sees half a report
    return data
