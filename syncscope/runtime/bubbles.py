"""GPU idle time (bubbles) and the syncs that cause them: a pure function over a timeline.

Input: the GPU activities of a profiled window (kernels, copies, memsets, per device and stream),
the host syncs syncscope recorded in it (when each wait began and ended, and when syncscope's own
bookkeeping after it was done), the host's in-scope region intervals, and the window itself, all
in nanoseconds on one clock. Output: every idle gap of every device, each with its cause.

Why a gap opened (checked in this order):
- `window_edge`: it touches the window's start or end; what came before or after is unknown.
- `sync`: a host thread was waiting in a sync when the device ran dry (the wait covers the gap's
  start), the work ending the gap started after that wait was over (so the host launched it
  after its release; the short gaps between kernels that were already queued while the host
  waited are not the sync's), and that thread is the one that launched it (when known). The
  device then sat idle until the host had done whatever it does after the sync and launched
  again: the bubble belongs to the sync's site.
- `region_edge`: the host left the regions in scope during the gap (the end of a step): not the
  in-scope code's doing, so not counted.
- `launch_bound`: none of the above: the host was simply too slow to keep the device fed.

syncscope's own bookkeeping after a sync (the stack walk, the event) runs while the device waits:
it is cut out of every gap and totalled apart as `syncscope_ns`, so a bubble is what the program
costs the device, not what syncscope does. Every gap's length is its counted part plus that own
part, so the totals add up to the window's idle time exactly (see `Attribution.total_idle_ns`).

Standard library only: tested on synthetic timelines without a GPU.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Any, Hashable, Iterable, Sequence

SYNC = "sync"
LAUNCH_BOUND = "launch_bound"
REGION_EDGE = "region_edge"
WINDOW_EDGE = "window_edge"
CAUSES = (SYNC, LAUNCH_BOUND, REGION_EDGE, WINDOW_EDGE)

# Host and device timestamps come from two clocks the profiler aligns to within microseconds, and
# a sync's wait ends a few microseconds after the device finishes: a sync counts as covering a
# gap's start if its wait is within this much of it.
DEFAULT_TOLERANCE_NS = 20_000


@dataclass(frozen=True)
class GpuActivity:
    """One kernel, copy or memset on a device: busy from `start_ns` to `end_ns`."""

    device: int
    stream: int
    start_ns: int
    end_ns: int
    launch_tid: int | None = None  # the host thread that launched it, where the trace says


@dataclass(frozen=True)
class SyncMark:
    """One recorded host sync. `key` names it for the caller (an event index); `done_ns` is when
    syncscope's own bookkeeping after the wait finished (>= `wait_end_ns`)."""

    key: Hashable
    wait_start_ns: int
    wait_end_ns: int
    done_ns: int
    tid: int | None = None


@dataclass(frozen=True)
class Gap:
    device: int
    start_ns: int
    end_ns: int
    cause: str
    sync: Hashable | None = None  # the SyncMark key, for cause == "sync"
    own_ns: int = 0  # syncscope's bookkeeping inside the gap, cut out of it

    @property
    def length_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def idle_ns(self) -> int:
        """The part of the gap that is counted (the program's, not syncscope's)."""
        return self.length_ns - self.own_ns


@dataclass
class Attribution:
    window_start_ns: int
    window_end_ns: int
    devices: tuple[int, ...]
    gaps: list[Gap] = field(default_factory=list)

    @property
    def window_ns(self) -> int:
        return self.window_end_ns - self.window_start_ns

    @property
    def gpu_time_ns(self) -> int:
        """The window's GPU time: its length on every device that ran anything in it."""
        return self.window_ns * len(self.devices)

    def idle_by_cause(self) -> dict[str, int]:
        totals = {cause: 0 for cause in CAUSES}
        for gap in self.gaps:
            totals[gap.cause] += gap.idle_ns
        return totals

    @property
    def syncscope_ns(self) -> int:
        return sum(g.own_ns for g in self.gaps)

    @property
    def total_idle_ns(self) -> int:
        return sum(g.length_ns for g in self.gaps)

    def by_sync(self) -> dict[Hashable, list[Gap]]:
        out: dict[Hashable, list[Gap]] = {}
        for gap in self.gaps:
            if gap.cause == SYNC:
                out.setdefault(gap.sync, []).append(gap)
        return out


def busy_periods(activities: Iterable[GpuActivity], start_ns: int, end_ns: int) -> dict[int, list[tuple[int, int]]]:
    """Per device, the union of its activities (all streams) clipped to [start_ns, end_ns],
    as sorted, disjoint (start, end) periods. Touching periods merge."""
    per_device: dict[int, list[tuple[int, int]]] = {}
    for a in activities:
        s, e = max(a.start_ns, start_ns), min(a.end_ns, end_ns)
        per_device.setdefault(a.device, [])
        if e > s:
            per_device[a.device].append((s, e))
    merged: dict[int, list[tuple[int, int]]] = {}
    for device, periods in per_device.items():
        periods.sort()
        out: list[list[int]] = []
        for s, e in periods:
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        merged[device] = [(s, e) for s, e in out]
    return merged


class _SyncIndex:
    """The syncs sorted by when their wait began, for the two questions asked per gap (a window
    holds thousands of gaps and syncs: each question looks only at the syncs near the gap)."""

    def __init__(self, syncs: Iterable[SyncMark]):
        self.syncs = sorted(syncs, key=lambda s: s.wait_start_ns)
        self.starts = [s.wait_start_ns for s in self.syncs]
        self.longest = max((s.done_ns - s.wait_start_ns for s in self.syncs), default=0)

    def _near(self, lo_ns: int, hi_ns: int) -> list[SyncMark]:
        """Syncs whose [wait start, done] can overlap [lo_ns, hi_ns]."""
        first = bisect.bisect_left(self.starts, lo_ns - self.longest)
        last = bisect.bisect_right(self.starts, hi_ns)
        return self.syncs[first:last]

    def covering(self, at_ns: int, until_ns: int, tid: int | None, tolerance_ns: int) -> SyncMark | None:
        """The sync whose wait covers `at_ns` (the device running dry) and was over before
        `until_ns` (the next work started), on thread `tid` where known; of several, the one
        released last (the host could launch again only after it)."""
        best = None
        for s in self._near(at_ns - tolerance_ns, at_ns + tolerance_ns):
            if s.wait_start_ns > at_ns + tolerance_ns or s.wait_end_ns < at_ns - tolerance_ns:
                continue
            if s.wait_end_ns >= until_ns:  # the next work was queued before the host was released
                continue
            if tid is not None and s.tid is not None and s.tid != tid:
                continue
            if best is None or s.wait_end_ns > best.wait_end_ns:
                best = s
        return best

    def own_time(self, start_ns: int, end_ns: int) -> int:
        """syncscope's bookkeeping (wait end to done, per sync) inside [start, end)."""
        own = sum(max(0, min(s.done_ns, end_ns) - max(s.wait_end_ns, start_ns)) for s in self._near(start_ns, end_ns))
        return min(own, end_ns - start_ns)


def _inside_one_region(regions: Sequence[tuple[int, int]] | None, start_ns: int, end_ns: int) -> bool:
    if regions is None:  # no region declared: the whole program is in scope
        return True
    return any(r0 <= start_ns and end_ns <= r1 for r0, r1 in regions)


def attribute(
    activities: Iterable[GpuActivity],
    syncs: Iterable[SyncMark],
    window: tuple[int, int],
    *,
    regions: Iterable[tuple[int, int]] | None = None,
    tolerance_ns: int = DEFAULT_TOLERANCE_NS,
) -> Attribution:
    """Find every idle gap of every device inside `window` and say what caused it.

    `regions`: the host's in-scope intervals (start, end), or None when the program declared none.
    A device counts when it has an activity in the window or overlapping it."""
    start_ns, end_ns = window
    if end_ns < start_ns:
        raise ValueError(f"window ends before it starts ({start_ns} > {end_ns})")
    activities = list(activities)
    index = _SyncIndex(syncs)
    # The thread that launched each device's activity starting at a given time (a gap's end).
    launcher: dict[tuple[int, int], int] = {}
    for a in activities:
        if a.launch_tid is not None:
            launcher.setdefault((a.device, a.start_ns), a.launch_tid)
    region_list = None if regions is None else sorted(regions)
    busy = busy_periods(activities, start_ns, end_ns)
    result = Attribution(start_ns, end_ns, tuple(sorted(busy)))
    for device in result.devices:
        periods = busy[device]
        edges = [start_ns] + [p for period in periods for p in period] + [end_ns]
        for i in range(0, len(edges), 2):
            g0, g1 = edges[i], edges[i + 1]
            if g1 <= g0:
                continue
            own = index.own_time(g0, g1)
            if g0 == start_ns or g1 == end_ns:
                result.gaps.append(Gap(device, g0, g1, WINDOW_EDGE, own_ns=own))
                continue
            sync = index.covering(g0, g1, launcher.get((device, g1)), tolerance_ns)
            if sync is not None:
                result.gaps.append(Gap(device, g0, g1, SYNC, sync=sync.key, own_ns=own))
            elif not _inside_one_region(region_list, g0, g1):
                result.gaps.append(Gap(device, g0, g1, REGION_EDGE, own_ns=own))
            else:
                result.gaps.append(Gap(device, g0, g1, LAUNCH_BOUND, own_ns=own))
    result.gaps.sort(key=lambda g: (g.start_ns, g.device))
    return result


def site_totals(attribution: Attribution, site_of: Any) -> dict[Any, tuple[int, int]]:
    """Bubble count and counted idle ns per site; `site_of(sync_key)` maps a sync to its site."""
    totals: dict[Any, list[int]] = {}
    for key, gaps in attribution.by_sync().items():
        entry = totals.setdefault(site_of(key), [0, 0])
        entry[0] += len(gaps)
        entry[1] += sum(g.idle_ns for g in gaps)
    return {site: (count, ns) for site, (count, ns) in totals.items()}
