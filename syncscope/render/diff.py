"""Before/after: which sync sites a change removed, added or changed, with the totals.

Sites are matched by fingerprint (syncscope/site.py: kind, path, function, normalised source,
occurrence; no line number), the identity baselines and the gate use, so lines moved by an edit
still match. Sites of one fingerprint that differ only in scope or allow status are summed.
A matched site is *changed* when its event count or its status differs, or when its blocked time
moved by more than `BLOCKED_CHANGE` (run-to-run noise on a GPU is a few percent); the others are
*unchanged*.

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from syncscope.report.aggregate import assign_fingerprints
from syncscope.report.schema import Report, SiteStats

BLOCKED_CHANGE = 0.10  # relative change of blocked time that counts as changed


@dataclass
class SiteTotals:
    """One fingerprint's sites in one report, added up."""

    fingerprint: str
    first: SiteStats  # where it is shown (the site with the most events)
    indices: list[int]  # positions in the report's sites
    count: int = 0
    blocked_ns: int = 0
    measured: bool = False
    in_scope_count: int = 0

    @property
    def status(self) -> str:
        if self.first.allowed:
            return "allowed"
        return "in scope" if self.in_scope_count else "out of scope"


@dataclass
class Change:
    """One fingerprint across the two reports (`before` or `after` is None for gone / new)."""

    state: str  # gone | new | changed | unchanged
    before: SiteTotals | None
    after: SiteTotals | None

    @property
    def shown(self) -> SiteTotals:
        return self.after or self.before  # type: ignore[return-value]


@dataclass
class Comparison:
    changes: list[Change]
    totals_before: dict
    totals_after: dict

    def of(self, state: str) -> list[Change]:
        return [c for c in self.changes if c.state == state]


def _by_fingerprint(report: Report) -> dict[str, SiteTotals]:
    if any(not s.fingerprint for s in report.sites):  # a hand-made report: identities as run gives them
        assign_fingerprints(list(report.sites))
    out: dict[str, SiteTotals] = {}
    for index, s in enumerate(report.sites):
        t = out.get(s.fingerprint)
        if t is None:
            t = out[s.fingerprint] = SiteTotals(s.fingerprint, s, [])
        elif s.count > t.first.count:
            t.first = s
        t.indices.append(index)
        t.count += s.count
        t.blocked_ns += s.blocked_ns
        t.measured = t.measured or s.measured > 0
        if s.in_scope and not s.allowed:
            t.in_scope_count += s.count
    return out


def totals(report: Report) -> dict:
    in_scope, _, _ = report.grouped()
    measured = any(s.measured for s in report.sites)
    return {
        "sites": len(in_scope),
        "all_sites": len(report.sites),
        "in_scope_events": sum(s.count for s in in_scope),
        "events": sum(s.count for s in report.sites),
        "blocked_ns": sum(s.blocked_ns for s in in_scope) if measured else None,
    }


def _changed(before: SiteTotals, after: SiteTotals) -> bool:
    if before.count != after.count or before.status != after.status:
        return True
    if before.measured and after.measured:
        base = max(before.blocked_ns, 1)
        return abs(after.blocked_ns - before.blocked_ns) / base > BLOCKED_CHANGE
    return before.measured != after.measured


def compare(before: Report, after: Report) -> Comparison:
    """What changed from `before` to `after`: gone sites (most events first), new, changed,
    unchanged."""
    old, new = _by_fingerprint(before), _by_fingerprint(after)
    changes = [Change("gone", old[fp], None) for fp in old if fp not in new]
    changes += [Change("new", None, new[fp]) for fp in new if fp not in old]
    for fp in new:
        if fp in old:
            changes.append(Change("changed" if _changed(old[fp], new[fp]) else "unchanged", old[fp], new[fp]))
    order = {"new": 0, "changed": 1, "gone": 2, "unchanged": 3}
    changes.sort(key=lambda c: (order[c.state], -max(c.before.blocked_ns if c.before else 0, c.after.blocked_ns if c.after else 0),
                                -max(c.before.count if c.before else 0, c.after.count if c.after else 0), c.shown.first.path, c.shown.first.line))
    return Comparison(changes, totals(before), totals(after))
