"""The runtime report: sites aggregated from events, saved as versioned JSON, loaded back.

Standard library only: `syncscope report`, `gate` and `combine` read reports without torch.
The schema is documented in docs/report-schema.md; bump `SCHEMA_VERSION` on any incompatible
change.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterable

from syncscope.runtime.events import Frame, HostSyncEvent
from syncscope.site import Site, with_occurrences

SCHEMA = "syncscope.report"
SCHEMA_VERSION = 2  # 2: per-site bubble fields and the top-level `bubbles` window (issue 11)
READABLE_VERSIONS = (1, 2)  # a version-1 report reads as one made without a bubble window
MAX_EVENTS = 200_000  # counts in sites stay exact past this; only the per-event timeline is cut
MAX_GAPS = 50_000  # likewise for the bubble window's per-gap timeline


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


_MISSING = object()
_LIMIT = 2**63  # counts and nanoseconds beyond int64 are damage, not data


def _field(data: dict, key: str, default):
    value = data.get(key, default) if default is not _MISSING else data[key]
    return default if value is None and default is not _MISSING else value


def _str(data: dict, key: str, default=_MISSING) -> str:
    value = _field(data, key, default)
    if not isinstance(value, str):
        raise TypeError(f"{key} must be a string, not {type(value).__name__}")
    return value


def _count(data: dict, key: str, default=_MISSING) -> int:
    value = _field(data, key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _LIMIT:
        raise ValueError(f"{key} must be a whole number >= 0, not {str(value)[:40]}")
    return value


def _bool(data: dict, key: str, default=_MISSING) -> bool:
    value = _field(data, key, default)
    if not isinstance(value, bool):
        raise TypeError(f"{key} must be true or false")
    return value


def _list(data: dict, key: str) -> list:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise TypeError(f"{key} must be a list")
    return value


def _strs(data: dict, key: str) -> list[str]:
    value = _list(data, key)
    if not all(isinstance(v, str) for v in value):
        raise TypeError(f"{key} must be a list of strings")
    return list(value)


def _optional_count(data: dict, key: str) -> int | None:
    return None if data.get(key) is None else _count(data, key)


def _optional_share(data: dict, key: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ValueError(f"{key} must be a fraction between 0 and 1, not {str(value)[:40]}")
    return float(value)


def _site_key(e: HostSyncEvent) -> tuple:
    return (e.site.path, e.site.line, e.kind, e.in_scope, e.allowed)


def sites_from_events(events: Iterable[HostSyncEvent], window=None) -> list[SiteStats]:
    """Aggregate events into sites, sorted by cost (the larger of total blocked time and total
    bubble time) then count, largest first. `window`: a bubble window's `WindowResult`, whose
    sync keys index `events`."""
    events = list(events)
    by_key: dict[tuple, SiteStats] = {}
    for e in events:
        key = _site_key(e)
        stats = by_key.get(key)
        if stats is None:
            stats = by_key[key] = SiteStats(
                path=e.site.path,
                line=e.site.line,
                function=e.site.function,
                kind=e.kind,
                source=e.source,
                in_scope=e.in_scope,
                allowed=e.allowed,
                allow_reason=e.allow_reason,
                stack=[f.to_json() for f in e.stack],
                related=e.related.to_json() if e.related else None,
            )
        stats.count += 1
        if e.api not in stats.apis:
            stats.apis.append(e.api)
        if e.region and e.region not in stats.regions:
            stats.regions.append(e.region)
        if e.blocked_ns is not None:
            stats.blocked_ns += e.blocked_ns
            stats.measured += 1
        if e.waited is False:
            stats.did_not_block += 1
    if window is not None:
        _add_bubbles(by_key, events, window)
    return assign_fingerprints(list(by_key.values()))


def _add_bubbles(by_key: dict[tuple, SiteStats], events: list[HostSyncEvent], window) -> None:
    from syncscope.runtime.bubbles import site_totals

    gpu_time = window.attribution.gpu_time_ns
    for stats in by_key.values():
        stats.bubble_count, stats.bubble_ns, stats.bubble_share = 0, 0, 0.0
    for key, (count, ns) in site_totals(window.attribution, lambda index: _site_key(events[index])).items():
        stats = by_key[key]
        stats.bubble_count, stats.bubble_ns = count, ns
        stats.bubble_share = round(ns / gpu_time, 6) if gpu_time else None


def bubbles_summary(window, events: list[HostSyncEvent], site_index: dict[tuple, int]) -> dict[str, Any]:
    """The report's top-level `bubbles` object (docs/report-schema.md)."""
    a = window.attribution
    gaps = a.gaps[:MAX_GAPS]
    return {
        "mode": window.mode,
        "steps": window.steps,
        "warmup": window.warmup,
        "window_start_ns": a.window_start_ns,
        "window_end_ns": a.window_end_ns,
        "window_ns": a.window_ns,
        "devices": list(a.devices),
        "gpu_time_ns": a.gpu_time_ns,
        "total_idle_ns": a.total_idle_ns,
        "idle_ns": a.idle_by_cause(),
        "syncscope_ns": a.syncscope_ns,
        "bubble_count": sum(1 for g in a.gaps if g.cause == "sync"),
        "bubble_ns": a.idle_by_cause()["sync"],
        "gap_count": len(a.gaps),
        "syncs_in_window": len(window.marks),
        "activities": window.activities,
        "release_lag_ns": window.release_lag_ns(),
        "overhead_ns": dict(window.overhead_ns),
        "notes": list(window.notes),
        "gaps": [
            {
                "device": g.device,
                "start_ns": g.start_ns,
                "end_ns": g.end_ns,
                "cause": g.cause,
                "site": site_index[_site_key(events[g.sync])] if g.sync is not None else None,
                "idle_ns": g.idle_ns,
            }
            for g in gaps
        ],
        "gaps_truncated": len(a.gaps) - len(gaps),
    }


def assign_fingerprints(sites: list[SiteStats]) -> list[SiteStats]:
    fingerprints = {site: site.fingerprint() for site in with_occurrences(s.site() for s in sites)}
    for stats in sites:
        stats.fingerprint = fingerprints[stats.site()]
    return sorted(sites, key=lambda s: (-s.cost_ns, -s.count, s.path, s.line))


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


def _is_int(value: Any, *, none: bool = True) -> bool:
    return (value is None and none) or (isinstance(value, int) and not isinstance(value, bool) and abs(value) < _LIMIT)


_EVENT_INTS = ("pid", "blocked_ns")  # or null; ts_ns is always a number (timelines sort on it)
_EVENT_TEXTS = ("thread", "region", "api")


def _check_events(events: list, n_sites: int) -> None:
    """Every reader (tables, Perfetto, combine) indexes and sorts events: check them once here."""
    for i, e in enumerate(events):
        if not isinstance(e, dict) or not _is_int(e.get("site"), none=False) or not 0 <= e["site"] < n_sites:
            raise ValueError(f"event #{i} does not name a site of this report")
        bad = [k for k in _EVENT_INTS if not _is_int(e.get(k))] + ["ts_ns"] * (not _is_int(e.get("ts_ns", 0), none=False)) + [
            k for k in _EVENT_TEXTS if not (e.get(k) is None or isinstance(e.get(k), str))
        ] + [k for k in ("waited",) if not (e.get(k) is None or isinstance(e.get(k), bool))]
        if bad:
            raise ValueError(f"event #{i}: {bad[0]} = {e.get(bad[0])!r}")


def _check_meta(data: dict) -> None:
    if not _process_ok(data):
        raise ValueError(f"pid, rank, host or created = {_short([data.get(k) for k in ('pid', 'rank', 'host', 'created')])}")
    parts = data.get("combined_from")
    if parts is not None and not (isinstance(parts, list) and all(isinstance(p, dict) and _process_ok(p) and _is_text(p.get("report")) for p in parts)):
        raise ValueError("combined_from must list the processes as objects with an integer pid")


def _process_ok(entry: dict) -> bool:
    """A process's identity (combine keys and sorts on it): integer pid and rank, text host and
    creation time, each or null."""
    return _is_int(entry.get("pid")) and _is_int(entry.get("rank")) and _is_text(entry.get("host")) and _is_text(entry.get("created"))


def _is_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


_BUBBLE_INTS = ("steps", "warmup", "window_start_ns", "window_end_ns", "window_ns", "gpu_time_ns", "total_idle_ns", "syncscope_ns",
                "bubble_count", "bubble_ns", "gap_count", "syncs_in_window", "activities", "gaps_truncated")
_GAP_INTS = ("device", "start_ns", "end_ns", "idle_ns")


def _check_bubbles(bubbles: Any, n_sites: int) -> None:
    """The top-level bubble window (docs/report-schema.md): every key its readers (the console
    line, Perfetto's GPU tracks, the summary) use has the schema's type, where present."""
    if bubbles is None:
        return
    if not isinstance(bubbles, dict):
        raise ValueError(f"bubbles = {_short(bubbles)} (an object expected)")
    bad = [k for k in _BUBBLE_INTS if not _is_int(bubbles.get(k, 0), none=False)]
    bad += [k for k in ("release_lag_ns",) if not _is_int(bubbles.get(k))]
    bad += [k for k in ("mode",) if not isinstance(bubbles.get(k, ""), str)]
    bad += [k for k in ("idle_ns", "overhead_ns") if not _is_int_map(bubbles.get(k, {}))]
    bad += [k for k in ("devices",) if not (isinstance(bubbles.get(k, []), list) and all(_is_int(d, none=False) for d in bubbles.get(k, [])))]
    bad += [k for k in ("notes",) if not (isinstance(bubbles.get(k, []), list) and all(isinstance(n, str) for n in bubbles.get(k, [])))]
    if bad:
        raise ValueError(f"bubbles.{bad[0]} = {_short(bubbles.get(bad[0]))}")
    gaps = bubbles.get("gaps", [])
    if not isinstance(gaps, list):
        raise ValueError(f"bubbles.gaps = {_short(gaps)} (a list expected)")
    for i, gap in enumerate(gaps):
        if not isinstance(gap, dict):
            raise ValueError(f"bubbles.gaps #{i} is not an object")
        bad = [k for k in _GAP_INTS if not _is_int(gap.get(k, 0), none=False)] + ["start_ns"] * ("start_ns" not in gap) + ["end_ns"] * ("end_ns" not in gap)
        bad += [k for k in ("cause",) if not (gap.get(k) is None or isinstance(gap.get(k), str))]
        site = gap.get("site")
        bad += ["site"] * (site is not None and not (_is_int(site, none=False) and 0 <= site < n_sites))
        if bad:
            raise ValueError(f"bubbles.gaps #{i}: {bad[0]} = {_short(gap.get(bad[0]))}")


def _is_int_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and _is_int(v, none=False) for k, v in value.items())


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def run_metadata(*, device: str, gpu: str | None, target: str, args: list[str], module: bool, root: str, mode: str | None = None) -> dict[str, Any]:
    """The top-level keys that say where and how a report was made (docs/report-schema.md)."""
    import datetime
    import socket
    import sys

    import syncscope

    torch = sys.modules.get("torch")  # already imported by whoever ran the program
    tool = {"name": "syncscope", "version": syncscope.__version__}
    if mode:
        tool["mode"] = mode
    return {
        "tool": tool,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "device": device,
        "gpu": gpu,
        "torch": getattr(torch, "__version__", None),
        "python": sys.version.split()[0],
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "rank": int(os.environ["RANK"]) if os.environ.get("RANK", "").isdigit() else None,
        "command": (["-m"] if module else []) + [target] + list(args),
        "project_root": root,
    }


def format_ms(ns: int | None) -> str:
    """Nanoseconds as milliseconds for tables; `n/m` where the time was not measured."""
    return "n/m" if ns is None else f"{ns / 1e6:.3f}"


def event_to_json(e: HostSyncEvent, site_index: int) -> dict:
    return {
        "site": site_index,
        "ts_ns": e.ts_ns,
        "thread": e.thread,
        "pid": e.pid,
        "region": e.region,
        "blocked_ns": e.blocked_ns,
        "api": e.api,
        "waited": e.waited,
    }


def build_report(events: list[HostSyncEvent], meta: dict[str, Any], bubbles=None, errors: list[dict] | None = None) -> Report:
    """`bubbles`: the bubble window's `WindowResult` (trap(bubbles=True)), if any; `errors`: the
    hooks' internal errors (runtime/hook_errors.py)."""
    sites = sites_from_events(events, bubbles)
    index = {(s.path, s.line, s.kind, s.in_scope, s.allowed): i for i, s in enumerate(sites)}
    kept = events[:MAX_EVENTS]
    if bubbles is not None:
        meta = {**meta, "bubbles": bubbles_summary(bubbles, events, index)}
    return Report(
        sites=sites,
        events=[event_to_json(e, index[_site_key(e)]) for e in kept],
        meta=meta,
        events_truncated=len(events) - len(kept),
        errors=list(errors or []),
    )


def _proc_umask() -> int | None:
    """The umask as Linux (>= 4.7) shows it in /proc/self/status: read without setting it."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _umask_without_proc() -> int:
    # `os.umask` can only read the mask by setting it. Done once, at import, before the user's
    # program runs threads: a file one of them created while the mask was 0 would be
    # world-writable (issue 28).
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


_IMPORT_UMASK = None if _proc_umask() is not None else _umask_without_proc()


def _read_umask() -> int:
    """The process umask, never set here: from /proc each time (the program may change it), or
    the value read at import where there is no /proc."""
    mask = _proc_umask()
    return mask if mask is not None else (_IMPORT_UMASK if _IMPORT_UMASK is not None else 0o022)


def write_json_atomic(path: str, data: Any) -> None:
    """Write to a temporary file beside `path`, then rename: readers never see half a file."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=1) + "\n")


def write_text_atomic(path: str, text: str) -> None:
    """A temporary file beside `path`, synced, then renamed over it: nobody opens half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".syncscope-", suffix=".tmp", dir=directory)
    try:
        os.chmod(tmp, 0o666 & ~_read_umask())  # mkstemp makes it private; a report is an ordinary file
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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
