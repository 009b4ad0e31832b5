"""Fakes for the oracle's CPU tests (no tests here): a clock and a GPU whose queue is a number.

`FakeGpu` keeps `busy_until`, the clock time at which all queued GPU work ends. A sleep queues
`cycles * ns_per_cycle`; `drain` (and the program's own `sync`) waits until `busy_until`. With a
`FakeClock` waiting just moves the clock, so tests are exact and instant; with the real clock
(`realtime_gpu`) waiting really sleeps, for end-to-end CLI tests.
"""

from __future__ import annotations

import time


class FakeClock:
    """Nanoseconds. Every reading advances by `tick` (the cost of the tracer's own work)."""

    def __init__(self, start: int = 1_000_000_000, tick: int = 500):
        self.now = start
        self.tick = tick

    def __call__(self) -> int:
        self.now += self.tick
        return self.now

    def wait_until(self, t: int) -> None:
        self.now = max(self.now, t)

    def advance(self, ns: int) -> None:
        self.now += ns


class RealClock:
    def __call__(self) -> int:
        return time.perf_counter_ns()

    @staticmethod
    def wait_until(t: int) -> None:
        while True:
            left = t - time.perf_counter_ns()
            if left <= 0:
                return
            time.sleep(min(left / 1e9, 0.002))

    def advance(self, ns: int) -> None:
        self.wait_until(time.perf_counter_ns() + ns)


class FakeGpu:
    """The `Gpu` interface of syncscope.oracle.timing, plus what a fake program does with it."""

    device = "fake:0"

    def __init__(self, clock, ns_per_cycle: float = 0.5, launch_ns: int = 5_000):
        self.clock = clock
        self.ns_per_cycle = ns_per_cycle
        self.launch_ns = launch_ns
        self.busy_until = 0
        self.marker_at = None
        self.stream = ("fake", 0)
        self.sleeps = 0
        self.drains = 0

    def _now(self) -> int:
        return self.clock.now if isinstance(self.clock, FakeClock) else self.clock()

    # -- the oracle's side -------------------------------------------------------------------
    def drain(self) -> None:
        self.drains += 1
        self.clock.wait_until(self.busy_until)

    def sleep(self, cycles: int) -> None:
        self.sleeps += 1
        start = max(self._now() + self.launch_ns, self.busy_until)
        self.busy_until = start + int(cycles * self.ns_per_cycle)
        self.marker_at = self.busy_until

    def sleep_done(self) -> bool:
        return self.marker_at is None or self._now() >= self.marker_at

    def stream_key(self) -> object:
        return self.stream

    # -- the program's side ------------------------------------------------------------------
    def launch(self, ns: int = 10_000) -> None:
        """Queue a kernel of `ns` (the host returns at once)."""
        self.busy_until = max(self._now(), self.busy_until) + ns

    def sync(self) -> None:
        """What `.item()` / cudaStreamSynchronize does: wait for everything queued."""
        self.clock.wait_until(self.busy_until)

    def record(self) -> int:
        """An event recorded now completes when the work queued so far is done."""
        return max(self._now(), self.busy_until)

    def wait_event(self, event_time: int) -> None:
        self.clock.wait_until(event_time)

    def host(self, ns: int) -> None:
        """Host work that takes `ns` whatever the GPU does (a Python loop)."""
        self.clock.advance(ns)


CURRENT: FakeGpu | None = None  # the fake the CLI test's program talks to


def realtime_gpu() -> FakeGpu:
    global CURRENT
    CURRENT = FakeGpu(RealClock(), ns_per_cycle=1.0, launch_ns=20_000)
    return CURRENT
