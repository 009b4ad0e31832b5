"""Which syncs a monitor records: a sampled fraction of regions, or of time.

Region sampling (the default): at the entry of each outermost region (`syncscope.region`,
`--scope`, `--module-forward`) the gate decides whether the trap is armed for the whole region
(`Gate.enter`); the decision lives in a context variable, so other threads and tasks keep their
own. Regions are sampled in runs of `run_length` consecutive regions (1: each region on its own),
runs starting at random, so that each region is sampled with probability `sample`: installing the
detector costs several times a sampled step's other overhead (~60 setattr/delattr on
`torch.Tensor` and `torch`, measured in bench/monitor_overhead.py), and a run pays it once for all
its regions. Time slicing
(for programs without regions): a timer thread arms the trap for `sample * period` seconds out of
every `period`, for the whole process. Auto (the default): time slices until the program enters
its first outermost region, region sampling from then on, so a program that marks no region is
still watched and one that does is sampled by its regions.

While nothing is armed on a real GPU, the detector is not installed at all (no shims, torch's
sync-debug mode off), so an unsampled step runs the program's own code and nothing else: the only
cost is a counter step and a comparison at region entry. The simulated device cannot be taken out (the program runs on
it), so there the recorder drops what is not sampled.
"""

from __future__ import annotations

import contextvars
import itertools
import math
import os
import random
import sys
import threading
import time
import weakref
from dataclasses import dataclass

from syncscope.runtime.policy import HostSyncError
from syncscope.runtime.recorder import Recorder

MODES = ("auto", "region", "time")

_armed_here: contextvars.ContextVar[bool] = contextvars.ContextVar("syncscope_sampled", default=False)


@dataclass
class SamplingCounts:
    """Regions (or time slices) seen and armed in this process, for scaling sampled rates."""

    regions: int = 0
    sampled: int = 0
    monitored_s: float = 0.0  # time mode
    sampled_s: float = 0.0


class Gate:
    """Arms and disarms the trap. `arm_detector` is called when a sampled region starts while the
    detector is out, `disarm_detector` when the last sampled region in progress ends and the next
    region will not be sampled (None on the simulated device): inside a run of sampled regions,
    and between two runs that follow each other at once, the detector stays in."""

    def __init__(self, sample: float, *, mode: str = "region", run_length: int = 1, period_s: float = 1.0,
                 seed: int | None = None, arm_detector=None, disarm_detector=None, on_regions=None, on_slice=None):
        self.sample = sample
        self.run_length = run_length
        self.mode = mode
        self.period_s = period_s
        self._counts = SamplingCounts()
        self._random = random.Random(seed).random
        self._lock = threading.Lock()
        self._active = 0  # armed regions (or slices) in progress, all threads together
        self._detector_in = False
        self._arm_detector = arm_detector
        self._disarm_detector = disarm_detector
        self._on_regions = on_regions  # metrics: called with (regions, sampled regions) to add
        # Region mode, read by regions.region at each outermost entry: `next(entries)` numbers
        # the region (atomic under the GIL); it is sampled if that reaches `next_sampled`.
        self.entries = itertools.count(1)
        self.next_sampled = self._gap()
        self._run_end = 0  # region mode: the index of the last region of the run in progress
        self._reported = 0  # of those, how many the metrics have been told of
        self._on_slice = on_slice  # metrics: called with (armed seconds, seconds) per time period
        self._time_armed = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._switch_lock = threading.Lock()  # auto mode: the first region turns the gate to regions
        if mode == "auto":
            self.next_sampled = 0  # every region entry reaches enter_counted until the switch
        gate = weakref.ref(self)
        os.register_at_fork(after_in_child=lambda: gate() is not None and gate()._forked())

    def _forked(self) -> None:
        """A forked child counts its own regions (the parent's are the parent's to report), and
        its lock and slicer thread are its own (threads do not survive a fork)."""
        self._counts = SamplingCounts()
        self.entries = itertools.count(1)
        self._reported = 0
        self._lock = threading.Lock()
        self._random = random.Random().random  # not the parent's sequence of draws
        self.next_sampled = 0 if self.mode == "auto" else self._gap()
        self._run_end = 0
        if self._thread is not None and not self._stop.is_set():
            self._time_armed = False
            self.start()

    @property
    def counts(self) -> SamplingCounts:
        if self.mode == "region":
            self._counts.regions = self.regions_entered()
        return self._counts

    # -- asked by the recorder on every sync -------------------------------------------------
    def armed_here(self) -> bool:
        return _armed_here.get() if self.mode == "region" else self._time_armed

    # -- region mode: called by regions.region() at outermost entry and exit -------------------
    def enter(self):
        """At an outermost region's entry; returns what `exit` takes, or None for an unsampled
        region (nothing to undo). `regions.region` does the first step inline (`entries`,
        `next_sampled`) and calls `enter_counted` only for a sampled region."""
        index = next(self.entries)
        return None if index < self.next_sampled else self.enter_counted(index)

    def enter_counted(self, index: int):
        """The region numbered `index` (1-based, from `entries`) has started. An unsampled region
        costs its caller one counter step and one comparison, with no lock, no draw and nothing
        to undo at exit: the gap to the next run of sampled regions is drawn once per run, from
        the geometric distribution, so each region is sampled with probability `sample` (with
        runs of 1, independently of the others)."""
        if self.mode == "auto":
            self._switch_to_regions(index)
        if index < self.next_sampled:
            return None
        with self._lock:
            if index < self.next_sampled:  # another thread took this draw first
                return None
            if index > self._run_end:  # the first region of a new run
                self._run_end = index + self.run_length - 1
            self.next_sampled = index + 1 if index < self._run_end else index + self._gap()
            self._counts.sampled += 1
            self._active += 1
            if not self._detector_in:
                self._detector_in = True
                if self._arm_detector is not None:
                    self._arm_detector()
            # Regions up to this one not yet handed to the metrics (the unsampled ones are added
            # here, in one write, rather than one write each).
            unreported = max(0, index - self._reported)
            self._reported = max(self._reported, index)
        if self._on_regions is not None:
            self._on_regions(unreported, 1)
        return _armed_here.set(True)

    def _switch_to_regions(self, index: int) -> None:
        """Auto mode, at the first outermost region: stop the slicer (taking the trap out if a
        slice had it in), then sample regions from this one on. What the slices recorded stays;
        the report's sampled count restarts with regions (slices are no regions)."""
        with self._switch_lock:
            if self.mode != "auto":
                return  # another thread's region switched first
            self._stop.set()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._set_time_armed(False)
            with self._lock:
                self._counts.sampled = 0
                self.next_sampled = index - 1 + self._gap()
                self.mode = "region"
            self.start()  # the region mode's flusher

    def _gap(self) -> int:
        """Regions from the last region of a run to the first of the next: 1 + G, G the
        unsampled regions between them, geometric with mean run_length * (1 - sample) / sample,
        so that runs cover the fraction `sample` of all regions. With runs of 1 this is one
        Bernoulli(sample) trial per region."""
        if self.sample >= 1.0:
            return 1
        start = self.sample / (self.sample + self.run_length * (1.0 - self.sample))  # P(a run starts here)
        # random() lies in [0, 1), so log1p(-random()) is finite; log1p keeps a tiny rate (1e-18,
        # where 1.0 - start == 1.0) from dividing by zero.
        return 1 + int(math.log1p(-self._random()) / math.log1p(-start))

    def exit(self, token) -> None:
        _armed_here.reset(token)
        with self._lock:
            self._active -= 1
            # Out only when no sampled region runs and the next region to come is not sampled.
            if self._active == 0 and self._detector_in and self.next_sampled > self.regions_entered() + 1:
                self._take_detector_out()

    def take_detector_out(self) -> None:
        """Take the detector out now if no sampled region runs, also in the middle of a run (a
        program that stops entering regions for a while); the run's next region puts it back."""
        with self._lock:
            if self._active == 0 and self._detector_in:
                self._take_detector_out()

    def _take_detector_out(self) -> None:
        self._detector_in = False
        if self._disarm_detector is not None:
            self._disarm_detector()

    def regions_entered(self) -> int:
        # itertools.count has no way to read it without stepping it; its repr is `count(N)`.
        return int(repr(self.entries)[6:-1]) - 1

    def flush(self) -> None:
        """Hand the regions not yet counted to the metrics."""
        with self._lock:
            total = self.regions_entered()
            unreported, self._reported = max(0, total - self._reported), max(self._reported, total)
        if unreported and self._on_regions is not None:
            self._on_regions(unreported, 0)

    def start(self) -> None:
        """Start (or, after `stop`, start again) the gate's thread. Time mode: the slicer, which
        arms the trap for a share of each period. Region mode: a flusher that hands the regions
        entered to the metrics once a period. Without it they reach the metrics only at sampled
        regions, in steps a run apart (~1.6 s at 500 regions/s and 1%), and a rate Prometheus
        takes over a window is off by up to one step at each end (+7.8% over 34 s on the H100)."""
        self._stop.clear()
        loop, name = (self._flush_loop, "flush") if self.mode == "region" else (self._slice_loop, "slices")
        self._thread = threading.Thread(target=loop, name=f"syncscope-monitor-{name}", daemon=True)
        self._thread.start()

    def _flush_loop(self) -> None:
        while not self._stop.wait(self.period_s):
            self.flush()

    # -- time mode ----------------------------------------------------------------------------

    def _slice_loop(self) -> None:
        armed_s = self.sample * self.period_s
        # A random phase, so that processes started together do not all watch the same moments.
        if self._stop.wait(self._random() * (self.period_s - armed_s)):
            return
        while True:
            started = time.monotonic()
            self._set_time_armed(True)
            stopped = self._stop.wait(armed_s)
            self._set_time_armed(False)
            stopped = stopped or self._stop.wait(self.period_s - armed_s)
            elapsed = time.monotonic() - started
            with self._lock:
                self._counts.monitored_s += elapsed
                self._counts.sampled_s += min(armed_s, elapsed)
            if self._on_slice is not None:
                self._on_slice(min(armed_s, elapsed), elapsed)
            if stopped:
                return

    def _set_time_armed(self, armed: bool) -> None:
        with self._lock:
            if armed == self._time_armed or (armed and self.mode == "region"):  # auto: switched meanwhile
                return
            if armed:
                self._counts.regions += 1
                self._counts.sampled += 1
            hook = self._arm_detector if armed else self._disarm_detector
            if hook is not None:
                hook()
            self._time_armed = armed

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._set_time_armed(False)
        with self._lock:
            if self._detector_in:  # a run cut short by the end (or a region still running)
                self._take_detector_out()
        self.flush()


class SampledRecorder(Recorder):
    """A recorder that keeps only the syncs of sampled regions, and counts each one in the
    metrics as it records it (so the JSON report and the metrics hold the same syncs)."""

    gate: Gate | None = None
    metrics = None

    def record(self, kind, api, *, frame=None, **kwargs):
        gate = self.gate
        if gate is not None and not gate.armed_here():
            return None
        try:
            event = super().record(kind, api, frame=frame if frame is not None else sys._getframe(1), **kwargs)
        except HostSyncError:
            # The error policy raised after keeping the event: count it too (this thread's last).
            me = threading.current_thread().name
            self._observe(next((e for e in reversed(self.events) if e.thread == me), None))
            raise
        self._observe(event)
        return event

    def _observe(self, event) -> None:
        if event is not None and event.in_scope and self.metrics is not None:
            self.metrics.observe(event)
