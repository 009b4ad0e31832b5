"""Baselines: the sync sites a project has accepted, keyed by edit-stable fingerprints.

A baseline is built from either a runtime report (`syncscope run`) or the JSON output of
`syncscope lint`; both are read into the same `ObservedSite` (a `Site` plus what the gate prints),
so the gate never cares which side produced them. Fingerprints come from `syncscope.site` alone:
kind or rule code, relative path, enclosing `Class.function`, normalised source and occurrence
index, never the line number (inserting lines above a site must not make it "new").

Standard library only: the gate runs in CI jobs that never import torch.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from syncscope.lint.findings_json import LintJsonError, finding_list, finding_sites
from syncscope.site import Site, with_occurrences

SCHEMA = "syncscope.baseline"
SCHEMA_VERSION = 1
RUNTIME = "runtime"
LINT = "lint"


class InputError(ValueError):
    """A baseline, runtime report or lint output that is missing or malformed (exit 2)."""


@dataclass(frozen=True)
class ObservedSite:
    """One site seen in a report or lint output, with what a human needs to find it."""

    site: Site  # with its occurrence index set
    fingerprint: str
    count: int = 1  # runtime: events at the site; lint: 1
    stack: tuple[tuple[str, int, str], ...] = ()  # (path, line, function), innermost first
    message: str = ""  # lint: the finding's message; runtime: what synced, how often
    level: str = "error"
    ranks: tuple[int, ...] = ()  # combined runtime reports: the ranks that synced here

    # With `message` and `level`, what the SARIF and GitHub writers (syncscope.render.sarif,
    # .github) take as a result record, so runtime sites go out through the linter's writers.
    @property
    def rule_id(self) -> str:
        return self.site.kind


@dataclass(frozen=True)
class Observation:
    """Everything the gate compares: the gated sites of one input, and where they came from."""

    origin: str  # RUNTIME or LINT
    path: str
    sites: tuple[ObservedSite, ...]
    steps: int | None = None  # runtime: steps the run made, when the report says
    # runtime: in-scope pageable `non_blocking` copies that did not block in this run
    # (`SiteStats.potential`). Listed by the gate, never failing it, never put in a baseline.
    potential: tuple[ObservedSite, ...] = ()
    # runtime: how the run ended (report/status.py); None for lint output. Only a completed run
    # saw everything it would have: the gate refuses any other (issue 28).
    end: Any = None

    @property
    def complete(self) -> bool:
        return self.end is None or self.end.completed


@dataclass(frozen=True)
class BaselineEntry:
    fingerprint: str
    kind: str
    path: str
    function: str
    source: str
    line: int  # where the site was when recorded: for people reading the file, never matched
    occurrence: int = 0
    count: int | None = None  # runtime events when recorded (informational)
    max_per_step: float | None = None  # optional budget: at most this many syncs per step

    def to_json(self) -> dict:
        data = {
            "fingerprint": self.fingerprint,
            "kind": self.kind,
            "path": self.path,
            "line": self.line,
            "function": self.function,
            "source": self.source,
            "occurrence": self.occurrence,
        }
        if self.count is not None:
            data["count"] = self.count
        if self.max_per_step is not None:
            data["max_per_step"] = self.max_per_step
        return data


@dataclass(frozen=True)
class Baseline:
    origin: str
    entries: tuple[BaselineEntry, ...]
    meta: dict = field(default_factory=dict, compare=False)

    def fingerprints(self) -> set[str]:
        return {e.fingerprint for e in self.entries}

    def to_json(self) -> dict:
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "origin": self.origin,
            **self.meta,
            "sites": [e.to_json() for e in sorted(self.entries, key=lambda e: (e.path, e.line, e.kind, e.occurrence))],
        }


# -- reading inputs ----------------------------------------------------------------------------
def _read_json(path: str, what: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, expected a {what} file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read {what} ({exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc}); is it a complete {what}?") from None


def _numbered(raw: list[tuple[Site, dict]]) -> list[tuple[Site, dict]]:
    """Give each site its occurrence index (shared rule from syncscope.site), keeping payloads."""
    numbered = {(s.path, s.line, s.kind, s.function, s.source): s for s in with_occurrences(s for s, _ in raw)}
    return [(numbered[(s.path, s.line, s.kind, s.function, s.source)], payload) for s, payload in raw]


def _runtime_sites(data: dict, origin: str) -> tuple[list[ObservedSite], list[ObservedSite]]:
    """The gated sites of a runtime report, and apart from them its potential syncs."""
    from syncscope.report.schema import Report, ReportError

    try:
        report = Report.from_json(data, origin=origin)
    except ReportError as exc:
        raise InputError(str(exc)) from None
    # Number occurrences over every site of the run (as the report does), then keep the ones
    # that count: in scope and not allowed. Allowed syncs were accepted in code, not here.
    raw = [(s.site(), {"stats": s, "raw": r}) for s, r in zip(report.sites, data["sites"])]
    merged: dict[str, ObservedSite] = {}
    blocked: set[str] = set()  # fingerprints with at least one site (scope, process) that blocked
    for site, payload in _numbered(raw):
        stats = payload["stats"]
        if not stats.in_scope or stats.allowed:
            continue
        if not stats.potential:
            blocked.add(site.fingerprint())
        processes = payload["raw"].get("processes") or []  # written by syncscope combine
        ranks = sorted({p["rank"] for p in processes if isinstance(p, dict) and p.get("count") and isinstance(p.get("rank"), int)})
        fp = site.fingerprint()
        stack = tuple((f.get("path", "?"), int(f.get("line", 0)), f.get("function", "?")) for f in stats.stack)
        previous = merged.get(fp)
        count = stats.count + (previous.count if previous else 0)
        merged[fp] = ObservedSite(
            site=site,
            fingerprint=fp,
            count=count,
            stack=stack or (previous.stack if previous else ()),
            message=f"host sync ({site.kind}) via {', '.join(stats.apis) or 'torch'}: {count} event(s) in the run",
            ranks=tuple(ranks),
        )
    # Potential only if no site merged into the fingerprint blocked: a copy that blocked once counts.
    gated = [o for fp, o in merged.items() if fp in blocked]
    return gated, [o for fp, o in merged.items() if fp not in blocked]


def _lint_sites(data: Any, origin: str) -> list[ObservedSite]:
    items = finding_list(data)
    if items is None:
        raise InputError(f"{origin}: not a syncscope report or lint JSON output (expected a list of findings)")
    try:
        raw = finding_sites(items, origin)
    except LintJsonError as exc:
        raise InputError(str(exc)) from None
    return [
        ObservedSite(
            site=site,
            fingerprint=site.fingerprint(),
            message=str(item.get("message", "")),
            level=str(item.get("level") or "error"),
        )
        for site, item in _numbered(raw)
        # a finding the code accepts (`with gpu_sync_allowed():`) is what an allowed runtime sync
        # is: accepted in code, not here
        if not item.get("accepted")
    ]


def load_observation(path: str) -> Observation:
    """Read a runtime report or lint JSON output. Raises `InputError` with a clear message."""
    data = _read_json(path, "report")
    if isinstance(data, dict) and data.get("schema") == SCHEMA:
        raise InputError(f"{path}: this is a baseline, not a report (pass it with --baseline)")
    if isinstance(data, dict) and "schema" in data:
        from syncscope.report.status import of_report

        sites, potential = _runtime_sites(data, path)
        steps = data.get("steps")
        return Observation(RUNTIME, path, tuple(sites), steps if isinstance(steps, int) and steps > 0 else None, tuple(potential),
                           end=of_report(data))
    return Observation(LINT, path, tuple(_lint_sites(data, path)))


# -- baseline files ----------------------------------------------------------------------------
def create(observation: Observation, *, budget_slack: float | None = None, steps: int | None = None) -> Baseline:
    """A baseline accepting every gated site of `observation`. With `budget_slack` (runtime only),
    each site also gets a per-step budget: its current syncs per step times the slack."""
    steps = steps or observation.steps
    if budget_slack is not None and observation.origin != RUNTIME:
        raise InputError("per-step budgets count runtime events: build them from a runtime report, not lint output")
    if budget_slack is not None and not steps:
        raise InputError("per-step budgets need the number of steps the run made: pass --steps N")
    entries = []
    for o in observation.sites:
        budget = None
        if budget_slack is not None and steps:
            budget = round(o.count / steps * budget_slack, 3)
        entries.append(
            BaselineEntry(
                fingerprint=o.fingerprint,
                kind=o.site.kind,
                path=o.site.path,
                function=o.site.function,
                source=o.site.source,
                line=o.site.line,
                occurrence=o.site.occurrence,
                count=o.count if observation.origin == RUNTIME else None,
                max_per_step=budget,
            )
        )
    import syncscope

    meta = {
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "tool": {"name": "syncscope", "version": syncscope.__version__},
        "from": observation.path,
    }
    return Baseline(observation.origin, tuple(entries), meta)


def _entry(item: Any, index: int, path: str) -> BaselineEntry:
    if not isinstance(item, dict):
        raise InputError(f"{path}: site #{index} is not an object")
    try:
        fingerprint = item["fingerprint"]
        if not isinstance(fingerprint, str) or not fingerprint:
            raise ValueError("empty fingerprint")
        budget = item.get("max_per_step")
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float)) or budget < 0):
            raise ValueError(f"max_per_step must be a number >= 0, got {budget!r}")
        return BaselineEntry(
            fingerprint=fingerprint,
            kind=str(item["kind"]),
            path=str(item["path"]),
            function=str(item.get("function", "")),
            source=str(item.get("source", "")),
            line=int(item.get("line", 0)),
            occurrence=int(item.get("occurrence", 0)),
            count=int(item["count"]) if item.get("count") is not None else None,
            max_per_step=float(budget) if budget is not None else None,
        )
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise InputError(f"{path}: site #{index} is malformed ({exc!s})") from None


def load_baseline(path: str) -> Baseline:
    data = _read_json(path, "baseline")
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise InputError(f'{path}: not a syncscope baseline (no "schema": "{SCHEMA}"); create one with `syncscope baseline create`')
    if data.get("version") != SCHEMA_VERSION:
        raise InputError(f"{path}: baseline version {data.get('version')!r}, this syncscope reads {SCHEMA_VERSION}")
    if data.get("origin") not in (RUNTIME, LINT):
        raise InputError(f"{path}: baseline origin must be {RUNTIME!r} or {LINT!r}, got {data.get('origin')!r}")
    if not isinstance(data.get("sites"), list):
        raise InputError(f'{path}: baseline has no "sites" list')
    entries = tuple(_entry(item, i, path) for i, item in enumerate(data["sites"]))
    meta = {k: v for k, v in data.items() if k not in ("schema", "version", "origin", "sites")}
    return Baseline(data["origin"], entries, meta)


def save_baseline(baseline: Baseline, path: str) -> None:
    from syncscope.atomic import write_json_atomic  # temp file + rename: never half a file

    write_json_atomic(path, baseline.to_json())


def shrink(baseline: Baseline, still_seen: Iterable[str]) -> Baseline:
    """The baseline without the sites that are gone. Never adds one: new sites must be accepted
    on purpose (`syncscope baseline create`), not slip in through an update."""
    seen = set(still_seen)
    kept = tuple(e for e in baseline.entries if e.fingerprint in seen)
    return Baseline(baseline.origin, kept, baseline.meta)
