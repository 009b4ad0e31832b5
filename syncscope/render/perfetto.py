"""A timeline of the syncs: Chrome trace event JSON, which Perfetto (ui.perfetto.dev) and
chrome://tracing open as they are.

One process track per process of the report (a combined report has several: ranks, workers), one
thread track per thread that synced, and each sync a slice as long as the host was blocked
(an instant where the time was not measured, as on the simulated device). Regions get a track of
their own beside each thread. A report holds the region of each sync, not when the region was
entered and left, so a region slice spans the syncs seen in it (first to last, one slice per
uninterrupted run); with no sync in a region there is nothing to draw. Timestamps count from the
start of each process's trap, so tracks of different processes are not aligned to one clock.

Format: https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
Standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from syncscope.report.schema import Report

REGION_TID_OFFSET = 1_000_000  # region tracks: beside the thread, never nested in its slices
GPU_TID_OFFSET = 2_000_000  # one track per GPU for the bubble window's idle gaps
_GAP_NAMES = {
    "launch_bound": "launch-bound",
    "region_edge": "region edge (not counted)",
    "window_edge": "window edge (not counted)",
}


def _us(ns: int) -> float:
    return ns / 1000.0


def _process_label(pid: int, info: dict | None, report: "Report") -> str:
    info = info or {}
    rank = info.get("rank", report.meta.get("rank"))
    host = info.get("host", report.meta.get("host"))
    where = f"pid {pid}" + (f", {host}" if host else "")
    return f"rank {rank} ({where})" if rank is not None else f"process {where}"


def trace(report: "Report") -> dict:
    """The report's sync events and regions as a Chrome trace (JSON object format)."""
    events: list[dict] = []
    processes: dict[int, dict | None] = {}
    for part in report.meta.get("combined_from") or []:
        if part.get("pid") is not None:
            processes[int(part["pid"])] = part
    threads: dict[tuple[int, str], int] = {}
    default_pid = int(report.meta.get("pid") or 0)

    def tid_of(pid: int, thread: str) -> int:
        key = (pid, thread)
        if key not in threads:
            threads[key] = len([k for k in threads if k[0] == pid]) + 1
        return threads[key]

    runs: dict[tuple[int, int], list] = {}  # (pid, tid) -> [region, start_us, end_us] runs
    for raw in sorted(report.events, key=lambda e: (e.get("pid") or default_pid, e.get("ts_ns", 0))):
        try:
            site = report.sites[raw["site"]]
        except (KeyError, IndexError, TypeError):
            continue
        pid = int(raw.get("pid") or default_pid)
        processes.setdefault(pid, None)
        tid = tid_of(pid, str(raw.get("thread") or "thread"))
        end = _us(int(raw.get("ts_ns") or 0))
        blocked = raw.get("blocked_ns")
        start = max(0.0, end - _us(blocked)) if blocked else end
        args = {
            "site": f"{site.path}:{site.line}",
            "function": site.function,
            "source": site.source,
            "api": raw.get("api"),
            "region": raw.get("region"),
            "in_scope": site.in_scope,
            "allowed": site.allowed,
        }
        if blocked is not None:
            args["blocked_ms"] = blocked / 1e6
        event = {
            "name": f"{site.kind} {site.path}:{site.line}",
            "cat": "sync" if site.in_scope and not site.allowed else ("allowed" if site.allowed else "out_of_scope"),
            "pid": pid,
            "tid": tid,
            "ts": start,
            "args": args,
        }
        if blocked:
            event.update(ph="X", dur=end - start)
        else:
            event.update(ph="i", s="t")
        events.append(event)
        region = raw.get("region")
        if region:
            track = runs.setdefault((pid, tid), [])
            if track and track[-1][0] == region:
                track[-1][2] = max(track[-1][2], end)
            else:
                track.append([region, start, end])
        else:
            runs.setdefault((pid, tid), []).append([None, start, end])  # ends the current run

    for (pid, tid), track in runs.items():
        for region, start, end in track:
            if region is None:
                continue
            events.append(
                {
                    "name": region,
                    "cat": "region",
                    "ph": "X",
                    "pid": pid,
                    "tid": tid + REGION_TID_OFFSET,
                    "ts": start,
                    "dur": max(end - start, 0.001),
                    "args": {"note": "spans the syncs seen in this region, first to last"},
                }
            )

    gpu_tracks = _gap_events(report, default_pid, events)
    if gpu_tracks:
        processes.setdefault(default_pid, None)

    metadata = []
    for pid, tid, name in gpu_tracks:
        metadata.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
    for index, (pid, info) in enumerate(sorted(processes.items())):
        metadata.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": _process_label(pid, info, report)}})
        rank = (info or {}).get("rank", report.meta.get("rank"))
        metadata.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": rank if rank is not None else index}})
    for (pid, thread), tid in threads.items():
        metadata.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": thread}})
        if runs.get((pid, tid)) and any(r[0] for r in runs[(pid, tid)]):
            metadata.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid + REGION_TID_OFFSET, "args": {"name": f"{thread}: regions"}})
    return {
        "traceEvents": metadata + events,
        "displayTimeUnit": "ms",
        "otherData": {
            "tool": "syncscope",
            "device": str(report.meta.get("device")),
            "events_truncated": str(report.events_truncated),
        },
    }


def _gap_events(report: "Report", pid: int, events: list[dict]) -> list[tuple[int, int, str]]:
    """The bubble window's idle gaps (report["bubbles"]["gaps"]), one track per GPU in the
    process that ran them, on the same clock as its sync slices: a bubble sits right after the
    sync that caused it, labelled with that sync's site. Returns the tracks made."""
    bubbles = report.meta.get("bubbles") or {}
    tracks: dict[int, int] = {}
    for gap in bubbles.get("gaps") or []:
        device = int(gap.get("device", 0))
        tid = tracks.setdefault(device, GPU_TID_OFFSET + device)
        start, end = int(gap["start_ns"]), int(gap["end_ns"])
        cause = gap.get("cause")
        args = {"cause": cause, "idle_ms": int(gap.get("idle_ns") or 0) / 1e6, "length_ms": (end - start) / 1e6}
        name = _GAP_NAMES.get(cause, str(cause))
        site_index = gap.get("site")
        if cause == "sync" and site_index is not None and 0 <= site_index < len(report.sites):
            site = report.sites[site_index]
            name = f"bubble after {site.kind} {site.path}:{site.line}"
            args.update(site=f"{site.path}:{site.line}", function=site.function, source=site.source)
        events.append(
            {"name": name, "cat": f"gpu_idle,{cause}", "ph": "X", "pid": pid, "tid": tid, "ts": _us(start), "dur": max(_us(end - start), 0.001), "args": args}
        )
    if bubbles:
        for device in bubbles.get("devices") or []:
            tid = tracks.setdefault(int(device), GPU_TID_OFFSET + int(device))
            events.append(
                {
                    "name": "profiled window",
                    "cat": "bubble_window",
                    "ph": "X",
                    "pid": pid,
                    "tid": tid + 1000,
                    "ts": _us(int(bubbles.get("window_start_ns", 0))),
                    "dur": max(_us(int(bubbles.get("window_ns", 0))), 0.001),
                    "args": {"mode": bubbles.get("mode"), "steps": bubbles.get("steps")},
                }
            )
    out = [(pid, tid, f"GPU {device}: idle gaps") for device, tid in sorted(tracks.items())]
    out += [(pid, tid + 1000, f"GPU {device}: profiled window") for device, tid in sorted(tracks.items())]
    return out
