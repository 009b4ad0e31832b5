"""From the trap's events to a report: events grouped into sites, bubble time attributed to
them, the per-event timeline and the top-level bubble window.

`window` is the bubble window's `WindowResult` (runtime/bubble_window.py), read through its
attributes only, so this layer does not import the runtime.
"""

from __future__ import annotations

from typing import Any, Iterable

from syncscope.events import HostSyncEvent
from syncscope.report.schema import Report, SiteStats
from syncscope.site import with_occurrences

MAX_EVENTS = 200_000  # counts in sites stay exact past this; only the per-event timeline is cut
MAX_GAPS = 50_000  # likewise for the bubble window's per-gap timeline


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
    # The attribution's `by_sync()` maps each sync (an index into `events`) to the gaps it caused;
    # summed here per site (runtime/bubbles.py's `site_totals` does the same for its own callers).
    gpu_time = window.attribution.gpu_time_ns
    for stats in by_key.values():
        stats.bubble_count, stats.bubble_ns, stats.bubble_share = 0, 0, 0.0
    for index, gaps in window.attribution.by_sync().items():
        stats = by_key[_site_key(events[index])]
        stats.bubble_count += len(gaps)
        stats.bubble_ns += sum(g.idle_ns for g in gaps)
    for stats in by_key.values():
        if stats.bubble_count:
            stats.bubble_share = round(stats.bubble_ns / gpu_time, 6) if gpu_time else None


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
