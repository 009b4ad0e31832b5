"""The profiled window of `syncscope run --bubbles` / `syncscope.trap(bubbles=True)`.

For a window of the run, torch's own profiler (Kineto, CUDA activities only: no per-op CPU
callbacks) records every kernel, copy and memset; syncscope's detector reports each sync's wait
(start, end) and when its own bookkeeping after it was done. When the window is over, the pure
function in `bubbles.py` finds the idle gaps and their causes.

Which window:
- The program declares regions (`syncscope.region`, `--scope`, `--module-forward`): skip the first
  `warmup` entries into a top-level region (lazy initialisation, autotuning, allocator growth), then
  profile the next `steps` ones, from the entry of the first to the exit of the last.
- It declares none: from its first sync to the end of the run, at most `seconds` long. A window
  opened that way is dropped if the program enters a region after all (then the regions count).

Outside the window nothing is added to what the trap costs today. The window never waits for the
GPU: torch's profiler context synchronizes the device when it stops, so it is not used; the
profiler is switched on and off directly and stopped at the program's own next sync after the
window (the device has drained then), or when the trap ends. Work still running on the device
at that point is past the window's end and not needed.

Timestamps: Kineto reports host and device times on the Unix clock (nanoseconds); the recorder
and the reports count `time.perf_counter_ns()` from the trap's start. The offset between the two
is read once when the window opens.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from syncscope.runtime import bubbles as B
from syncscope.runtime import regions
from syncscope.runtime.recorder import Recorder

MAX_GAPS_IN_REPORT = 50_000  # per-gap records for timelines; totals stay exact past it


class BubblesUnavailable(RuntimeError):
    """--bubbles asked for where it cannot work (no GPU, the simulated device, no Kineto)."""


def check_available(device: str) -> None:
    if device != "cuda":
        raise BubblesUnavailable(
            "--bubbles measures GPU idle time and needs a real CUDA GPU; the simulated device has no "
            "timeline (run on a GPU machine, or drop --bubbles)"
        )
    import torch

    if not torch.cuda.is_available():
        raise BubblesUnavailable("--bubbles needs a CUDA GPU, and torch sees none here")
    if not torch.autograd.kineto_available():
        raise BubblesUnavailable("--bubbles needs torch's Kineto profiler, which this torch build lacks")


def _clock_offset_ns() -> int:
    """Unix time minus perf_counter time, from the tightest of a few paired reads."""
    best = None
    for _ in range(5):
        p0 = time.perf_counter_ns()
        unix = time.time_ns()
        p1 = time.perf_counter_ns()
        if best is None or p1 - p0 < best[0]:
            best = (p1 - p0, unix - (p0 + p1) // 2)
    return best[1]


@dataclass
class WindowResult:
    """What the window saw, in trap-relative nanoseconds, ready for the report."""

    attribution: B.Attribution
    mode: str  # "regions" or "program"
    steps: int  # regions profiled (0 in program mode)
    warmup: int
    marks: list[B.SyncMark]
    activities: int
    overhead_ns: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # The profiler's device events as it gave them: (device, start on the Unix clock, duration),
    # and `unix_shift_ns` (Unix ns minus trap-relative ns), so a check can redo the sums its own way.
    raw_device_events: list[tuple[int, int, int]] = field(default_factory=list)
    unix_shift_ns: int = 0

    def release_lag_ns(self) -> int | None:
        """Median time from a device running dry to the host's release from the sync that owns
        the gap: a few microseconds when the two clocks agree (a check on the alignment)."""
        ends = {m.key: m.wait_end_ns for m in self.marks}
        lags = sorted(ends[g.sync] - g.start_ns for g in self.attribution.gaps if g.cause == B.SYNC)
        return lags[len(lags) // 2] if lags else None


class _Profiler:
    """torch's Kineto profiler with CUDA activities, switched on and off without the device
    synchronize that `torch.autograd.profiler.profile.__exit__` does."""

    def __init__(self) -> None:
        import torch
        from torch.autograd import profiler as autograd_profiler

        self._torch = torch
        self._profile = autograd_profiler.profile(use_kineto=True, use_cpu=True)
        # CUDA only: kernels, copies, memsets and the runtime calls that launched them, without a
        # callback on every CPU op (that would slow the host the window measures).
        self._profile.kineto_activities = {torch.profiler.ProfilerActivity.CUDA}

    def start(self) -> None:
        self._profile.__enter__()

    def stop(self):
        # use_device is None, so __exit__ does not synchronize; it only disables Kineto.
        self._profile.__exit__(None, None, None)
        return self._profile.kineto_results.events()


class BubbleWindow:
    def __init__(self, recorder: Recorder, *, steps: int = 20, warmup: int = 3, seconds: float = 10.0):
        if steps < 1:
            raise ValueError("--bubble-steps must be at least 1")
        if warmup < 0:
            raise ValueError("the bubble warm-up cannot be negative")
        self.recorder = recorder
        self.steps, self.warmup, self.seconds = steps, warmup, seconds
        self.mode: str | None = None
        self.result: WindowResult | None = None
        self._profiler: _Profiler | None = None
        self._state = "waiting"  # waiting -> open -> closing -> done
        self._entries = 0
        self._region_start: int | None = None
        self._regions: list[tuple[int, int]] = []
        self._marks: list[B.SyncMark] = []
        self._window: list[int] = [0, 0]
        self._offset_ns = 0
        self._overhead: dict[str, int] = {}
        self._notes: list[str] = []
        self._lock = threading.RLock()
        self._finished = False

    # -- hooks: the trap (runtime/trap.py) makes the window its step observer and the recorder's
    # `on_sync` while it runs, and calls `finish` when it ends ----------------------------------
    def _now(self) -> int:
        return time.perf_counter_ns() - self.recorder.started_ns

    def step_entered(self) -> None:
        """A thread entered a top-level region (called by regions.region)."""
        with self._lock:
            if self.mode == "program":  # regions after all: they decide the window
                self._abandon()
            self.mode = "regions"
            self._entries += 1
            if self._state == "waiting" and self._entries == self.warmup + 1:
                self._open()
            if self._state == "open":
                self._region_start = self._now()

    def step_exited(self) -> None:
        with self._lock:
            if self._state != "open" or self._region_start is None:
                return
            now = self._now()
            self._regions.append((self._region_start, now))
            self._region_start = None
            if self._entries >= self.warmup + self.steps:
                self._window[1] = now
                self._state = "closing"

    def on_sync(self, event, wait_start_ns: int, wait_end_ns: int, done_ns: int) -> None:
        """Called by the detector after each timed sync (perf_counter_ns, absolute)."""
        with self._lock:
            base = self.recorder.started_ns
            if self._state == "open":
                events = self.recorder.events
                key = len(events) - 1
                if key < 0 or events[key] is not event:  # another thread recorded in between
                    key = next((i for i in range(len(events) - 1, -1, -1) if events[i] is event), None)
                if key is not None:
                    self._marks.append(
                        B.SyncMark(key, wait_start_ns - base, wait_end_ns - base, done_ns - base, threading.get_native_id())
                    )
                if self.mode == "program" and self._now() - self._window[0] > self.seconds * 1e9:
                    self._window[1] = self._now()
                    self._state = "closing"
            if self._state == "closing":
                self._close()  # right after a sync of the program's: the device has drained
            elif self._state == "waiting" and self.mode is None and not regions.scope_declared():
                self.mode = "program"
                self._open()

    def finish(self) -> None:
        """The trap is ending: close whatever is still open. Idempotent."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
            if self._state == "open":
                self._window[1] = self._now()
                if self._region_start is not None:
                    self._regions.append((self._region_start, self._window[1]))
                    self._notes.append("the run ended inside a profiled region")
                if self.mode == "regions" and self._entries < self.warmup + self.steps:
                    self._notes.append(f"the run ended after {len(self._regions)} of {self.steps} profiled regions")
                self._state = "closing"
            if self._state == "closing":
                self._close()
            elif self._state == "waiting" and self.result is None:
                self._notes.append(
                    f"no window was profiled: the run entered {self._entries} top-level regions, "
                    f"the warm-up skips {self.warmup}" if self.mode == "regions" else "no window was profiled: the run made no timed sync"
                )

    # -- the profiler ----------------------------------------------------------------------------
    def _open(self) -> None:
        t0 = time.perf_counter_ns()
        with regions.suspend():
            self._profiler = _Profiler()
            self._profiler.start()
        self._offset_ns = _clock_offset_ns()
        self._window = [self._now(), 0]
        self._overhead["open_ns"] = time.perf_counter_ns() - t0
        self._state = "open"

    def _abandon(self) -> None:
        if self._profiler is not None:
            with regions.suspend():
                self._profiler.stop()
        self._profiler = None
        self._marks.clear()
        self._regions.clear()
        self._state = "waiting"
        self._notes.append("a window opened before the program's first region was dropped")

    def _close(self) -> None:
        t0 = time.perf_counter_ns()
        with regions.suspend():
            events = self._profiler.stop()
        t1 = time.perf_counter_ns()
        self._profiler = None
        self._state = "done"
        activities, raw = self._activities(events)
        start, end = self._window
        attribution = B.attribute(
            activities,
            self._marks,
            (start, end),
            regions=self._regions if self.mode == "regions" else None,
        )
        self._overhead.update(close_ns=t1 - t0, analysis_ns=time.perf_counter_ns() - t1)
        self.result = WindowResult(
            attribution=attribution,
            mode=self.mode or "program",
            steps=len(self._regions) if self.mode == "regions" else 0,
            warmup=self.warmup if self.mode == "regions" else 0,
            marks=list(self._marks),
            activities=len(activities),
            overhead_ns=dict(self._overhead),
            notes=list(self._notes),
            raw_device_events=raw,
            unix_shift_ns=self._offset_ns + self.recorder.started_ns,
        )

    def _activities(self, events) -> tuple[list[B.GpuActivity], list[tuple[int, int, int]]]:
        """Kineto's device events as activities on the recorder's clock, each with the host
        thread that launched it where the runtime call that did is in the trace."""
        import torch

        cuda = torch.autograd.DeviceType.CUDA
        shift = self._offset_ns + self.recorder.started_ns  # Unix ns -> trap-relative ns
        # Which field of a runtime-call event holds the OS thread id differs between torch
        # versions: take the first whose values are threads that synced in the window.
        fields = ("device_resource_id", "device_index", "start_thread_id")
        candidates: dict[str, dict[int, int]] = {name: {} for name in fields}
        device_events = []
        for e in events:
            if e.device_type() == cuda:
                device_events.append(e)
            elif e.correlation_id() and e.name().startswith("cuda"):
                for name in fields:
                    candidates[name][e.correlation_id()] = getattr(e, name)()
        our_tids = {m.tid for m in self._marks}
        launch_tid = next((c for c in candidates.values() if our_tids & set(c.values())), {})
        if not launch_tid and self._marks and device_events:
            self._notes.append("launching threads not in the trace: syncs matched to gaps by time only")
        out, raw = [], []
        for e in device_events:
            raw.append((e.device_index(), e.start_ns(), e.duration_ns()))
            start = e.start_ns() - shift
            end = start + e.duration_ns()
            if end > start:
                out.append(B.GpuActivity(e.device_index(), e.device_resource_id(), start, end, launch_tid.get(e.correlation_id())))
        return out, raw
