"""The runtime report's schema: the per-site record, the report object, its JSON form and how a
saved file is read back (checked by report/validate.py).

Standard library only: `syncscope report`, `gate` and `combine` read reports without torch.
The schema is documented in docs/report-schema.md; bump `SCHEMA_VERSION` on any incompatible
change.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from syncscope.report.validate import (
    _bool,
    _check_bubbles,
    _check_events,
    _check_meta,
    _count,
    _list,
    _optional_count,
    _optional_share,
    _str,
    _strs,
)
from syncscope.site import Site

SCHEMA = "syncscope.report"
SCHEMA_VERSION = 2  # 2: per-site bubble fields and the top-level `bubbles` window (issue 11)
READABLE_VERSIONS = (1, 2)  # a version-1 report reads as one made without a bubble window


class ReportError(ValueError):
    """A report file that is missing, unreadable or not a syncscope report."""


@dataclass
class SiteStats:
    """All events at one site (path, line, kind), split by scope and allow status."""

    path: str
    line: int
    function: str
    kind: str
    source: str
    in_scope: bool
    allowed: bool
    apis: list[str] = field(default_factory=list)
    regions: list[str] = field(default_factory=list)
    count: int = 0
    blocked_ns: int = 0
    measured: int = 0  # how many events had a measured blocked time
    # Events whose measured time says they did not wait (pageable non_blocking copies only,
    # runtime/pageable.py). A site where every event did not wait is only a potential sync.
    did_not_block: int = 0
    stack: list[dict] = field(default_factory=list)
    related: dict | None = None
    allow_reason: str | None = None
    fingerprint: str = ""
    # GPU idle time after this site's syncs (runtime/bubbles.py); None where the run had no
    # profiled window (no --bubbles, the simulated device, a version-1 report).
    bubble_count: int | None = None
    bubble_ns: int | None = None
    bubble_share: float | None = None  # bubble_ns / the window's GPU time

    @property
    def potential(self) -> bool:
        """A pageable `non_blocking` copy that did not block in this run (each of its events was
        measured and none waited): a sync once the copy or the queue grows, not one that cost
        time here. Kept apart from the syncs that blocked, in the table and the gate."""
        return self.count > 0 and self.did_not_block == self.count

    @property
    def mean_blocked_ns(self) -> int | None:
        return self.blocked_ns // self.measured if self.measured else None

    @property
    def mean_bubble_ns(self) -> int | None:
        return self.bubble_ns // self.bubble_count if self.bubble_count else None

    @property
    def cost_ns(self) -> int:
        """What the site costs, for sorting: the larger of the host's wait and the GPU's idle."""
        return max(self.blocked_ns, self.bubble_ns or 0)

    def site(self) -> Site:
        return Site(self.path, self.line, self.function, self.kind, self.source)

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "function": self.function,
            "kind": self.kind,
            "source": self.source,
            "apis": self.apis,
            "count": self.count,
            "blocked_ns": self.blocked_ns if self.measured else None,
            "mean_blocked_ns": self.mean_blocked_ns,
            "blocked_measured": self.measured,
            "did_not_block": self.did_not_block,
            "potential": self.potential,
            "in_scope": self.in_scope,
            "allowed": self.allowed,
            "allow_reason": self.allow_reason,
            "regions": self.regions,
            "stack": self.stack,
            "related": self.related,
            "fingerprint": self.fingerprint,
            "bubble_count": self.bubble_count,
            "bubble_ns": self.bubble_ns,
            "mean_bubble_ns": self.mean_bubble_ns,
            "bubble_share": self.bubble_share,
        }

    @classmethod
    def from_json(cls, data: dict) -> "SiteStats":
        """One site of a saved report; ValueError/TypeError/KeyError when a field has the wrong
        type (every renderer relies on these types: a damaged file fails here, once, clearly)."""
        if not isinstance(data, dict):
            raise TypeError("a site must be an object")
        related = data.get("related")
        stack = list(_list(data, "stack"))
        for frame in stack + ([related] if related is not None else []):
            if not isinstance(frame, dict):
                raise TypeError("stack and related must be objects")
            _str(frame, "path"), _count(frame, "line"), _str(frame, "function")
        return cls(
            path=_str(data, "path"),
            line=_count(data, "line"),
            function=_str(data, "function"),
            kind=_str(data, "kind"),
            source=_str(data, "source", ""),
            in_scope=_bool(data, "in_scope"),
            allowed=_bool(data, "allowed", False),
            apis=_strs(data, "apis"),
            regions=_strs(data, "regions"),
            count=_count(data, "count"),
            blocked_ns=_count(data, "blocked_ns", 0),
            measured=_count(data, "blocked_measured", 0),
            did_not_block=_count(data, "did_not_block", 0),
            stack=stack,
            related=related,
            allow_reason=data.get("allow_reason") if isinstance(data.get("allow_reason"), str) else None,
            fingerprint=_str(data, "fingerprint", ""),
            bubble_count=_optional_count(data, "bubble_count"),
            bubble_ns=_optional_count(data, "bubble_ns"),
            bubble_share=_optional_share(data, "bubble_share"),
        )


@dataclass
class Report:
    sites: list[SiteStats]
    events: list[dict]
    meta: dict[str, Any]
    events_truncated: int = 0
    # Internal errors of syncscope's hooks, caught so the program went on (runtime/hook_errors.py):
    # [{"where", "error", "count"}]. Reports older than this field load with none.
    errors: list[dict] = field(default_factory=list)

    @property
    def in_scope_sites(self) -> list[SiteStats]:
        return [s for s in self.sites if s.in_scope]

    def grouped(self) -> tuple[list[SiteStats], list[SiteStats], list[SiteStats]]:
        """The sites as every rendering shows them apart: those that count (in scope, not
        allowed, and blocked), the allowed ones, and the rest (outside the regions in scope).
        In-scope potential syncs that did not block are in none of the three: `potential()`."""
        in_scope = [s for s in self.sites if s.in_scope and not s.allowed and not s.potential]
        allowed = [s for s in self.sites if s.allowed]
        out_of_scope = [s for s in self.sites if not s.in_scope and not s.allowed]
        return in_scope, allowed, out_of_scope

    def potential(self) -> list[SiteStats]:
        """In-scope, not allowed sites that are only potential syncs (`SiteStats.potential`)."""
        return [s for s in self.sites if s.in_scope and not s.allowed and s.potential]

    def to_json(self) -> dict:
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            **self.meta,
            "summary": {
                "sites": len(self.sites),
                "events": sum(s.count for s in self.sites),
                "in_scope_events": sum(s.count for s in self.sites if s.in_scope and not s.allowed),
                "potential_events": sum(s.count for s in self.potential()),
                "allowed_events": sum(s.count for s in self.sites if s.allowed),
                "out_of_scope_events": sum(s.count for s in self.sites if not s.in_scope),
                "blocked_ns": sum(s.blocked_ns for s in self.sites),
                "bubble_ns": self.meta["bubbles"].get("bubble_ns") if self.meta.get("bubbles") else None,
            },
            "sites": [s.to_json() for s in self.sites],
            "events": self.events,
            "events_truncated": self.events_truncated,
            "errors": self.errors,
        }

    @classmethod
    def from_json(cls, data: Any, origin: str = "report") -> "Report":
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise ReportError(f"{origin}: not a syncscope report (no \"schema\": \"{SCHEMA}\")")
        if data.get("version") not in READABLE_VERSIONS:
            readable = " and ".join(str(v) for v in READABLE_VERSIONS)
            raise ReportError(f"{origin}: report schema version {data.get('version')!r}, this syncscope reads {readable}")
        try:
            if not isinstance(data.get("sites"), list):
                raise TypeError('no "sites" list')
            sites = [SiteStats.from_json(s) for s in data["sites"]]
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise ReportError(f"{origin}: malformed site entry ({exc})") from None
        try:
            events = list(data.get("events", []))
            events_truncated = int(data.get("events_truncated", 0))
            _check_events(events, len(sites))
        except (TypeError, ValueError, OverflowError) as exc:
            raise ReportError(f"{origin}: malformed events ({exc})") from None
        try:
            _check_meta(data)
            _check_bubbles(data.get("bubbles"), len(sites))
        except (TypeError, ValueError, OverflowError) as exc:
            raise ReportError(f"{origin}: malformed report fields ({exc})") from None
        errors = data.get("errors", [])
        if not isinstance(errors, list) or not all(isinstance(e, dict) for e in errors):
            raise ReportError(f"{origin}: malformed \"errors\" (a list of objects expected)")
        meta = {k: v for k, v in data.items() if k not in ("schema", "version", "summary", "sites", "events", "events_truncated", "errors")}
        return cls(sites=sites, events=events, meta=meta, events_truncated=events_truncated, errors=list(errors))


def format_ms(ns: int | None) -> str:
    """Nanoseconds as milliseconds for tables; `n/m` where the time was not measured."""
    return "n/m" if ns is None else f"{ns / 1e6:.3f}"


def read_report_json(path: str):
    """A report file's JSON as written, or a ReportError saying in one line why it cannot be read."""
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except FileNotFoundError:
        raise ReportError(f"{path}: no such report") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportError(f"{path}: cannot read report ({exc})") from None


def load_report(path: str) -> Report:
    return Report.from_json(read_report_json(path), origin=path)
