"""Keeping known GPU work queued ahead of each line, and calibrating it. Standard library only.

The GPU is reached through a small `Gpu` interface (`syncscope.oracle.cuda.CudaGpu` on a real
device, fakes in the tests), so every decision here runs and is tested without a GPU.

The queue ahead of a line (`QueuedPrimer`)
------------------------------------------
Before a line, the queue must hold a known amount of GPU work. After a *free* line the sleep queued
for it is still running, so the next line reuses it (the queue is "chained") instead of draining
it: draining would also complete everything the previous line queued, and a wait on something
recorded earlier (`event.record()` on one line, `event.synchronize()` on the next) would then look
free. The queue is drained (a synchronize done by the oracle, outside every timed window) and a
fresh sleep queued when the last sleep has finished (the previous line waited for it), when the
estimated remaining work falls below `low_water` of one sleep, or when the current stream changed.
The work ahead of a line is estimated from the host clock: a fresh sleep ends `sleep_ns` after it
was queued on an idle GPU. GPU work the program itself queued only makes the real queue longer
than the estimate, which can only make a waiting line look *more* blocked, never a free one.

`IdlePrimer` drains before every line: the same line timed on an idle GPU, so host work that takes
long without waiting (a Python loop, a slow launch) is not mistaken for a wait.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable, Protocol

Clock = Callable[[], int]  # nanoseconds, monotonic (time.perf_counter_ns)

DEFAULT_SLEEP_NS = 25_000_000
LOW_WATER = 0.5  # re-queue when less than half a sleep is estimated to remain


class Gpu(Protocol):
    """What the oracle needs from a device. All of it is non-blocking except `drain`."""

    device: str

    def drain(self) -> None:
        """Wait until all queued work on the device is done (the oracle's own, untimed sync)."""

    def sleep(self, cycles: int) -> None:
        """Queue `cycles` GPU clock cycles of spinning on the current stream, then a marker."""

    def sleep_done(self) -> bool:
        """Whether the marker after the last queued sleep has been reached (never blocks)."""

    def stream_key(self) -> object:
        """Identity of the current stream (device, stream id)."""


class CalibrationError(RuntimeError):
    pass


@dataclass(frozen=True)
class Calibration:
    device: str
    cycles: int
    sleep_ns: int  # host time from queuing the sleep on an idle GPU to its completion (median)
    samples_ns: tuple[int, ...] = ()

    def to_json(self) -> dict:
        return {"device": self.device, "cycles": self.cycles, "sleep_ns": self.sleep_ns, "samples_ns": list(self.samples_ns)}


def _time_sleep(gpu: Gpu, clock: Clock, cycles: int) -> int:
    gpu.drain()
    start = clock()
    gpu.sleep(cycles)
    gpu.drain()
    return clock() - start


def calibrate(
    gpu: Gpu,
    clock: Clock,
    target_ns: int = DEFAULT_SLEEP_NS,
    *,
    tolerance: float = 0.15,
    rounds: int = 10,
    samples: int = 3,
    start_cycles: int = 1_000_000,
    warmup_sleeps: int = 4,
) -> Calibration:
    """Find the number of sleep cycles that keeps this device busy for ~`target_ns`.

    The GPU clock rises under load, so `warmup_sleeps` sleeps of about the target run first; then
    the estimate is refined until one measurement lands within `tolerance`, and the result is the
    median of that one and `samples - 1` more."""
    if target_ns <= 0:
        raise ValueError("the sleep target must be positive")
    cycles = max(1, int(start_cycles))
    first = max(1, _time_sleep(gpu, clock, cycles))  # also loads the sleep kernel
    # Raise the GPU clock before measuring: a sleep calibrated at idle clocks would run shorter
    # once the clock is up, and every wait would then look smaller than the work ahead.
    guess = max(1, int(cycles * min(100.0, max(0.01, target_ns / first))))
    for _ in range(warmup_sleeps):
        gpu.sleep(guess)
    gpu.drain()
    for _ in range(rounds):
        elapsed = max(1, _time_sleep(gpu, clock, cycles))
        if abs(elapsed - target_ns) <= tolerance * target_ns:
            measured = [elapsed] + [_time_sleep(gpu, clock, cycles) for _ in range(samples - 1)]
            return Calibration(gpu.device, cycles, int(statistics.median(measured)), tuple(measured))
        # Scale, but never by more than 100x at once: a first sleep shorter than the launch
        # overhead says little about the clock rate.
        factor = min(100.0, max(0.01, target_ns / elapsed))
        cycles = max(1, int(cycles * factor))
    raise CalibrationError(
        f"could not calibrate a {target_ns / 1e6:.1f} ms sleep on {gpu.device} in {rounds} rounds "
        f"(last: {cycles} cycles took {elapsed / 1e6:.2f} ms)"
    )


def recheck(gpu: Gpu, clock: Clock, calibration: Calibration, warmup_sleeps: int = 2) -> int:
    """Time the calibrated sleep again (after a warm-up, as at calibration): a large change means
    the GPU clock moved and ratios are off by as much. Returns ns."""
    for _ in range(warmup_sleeps):
        gpu.sleep(calibration.cycles)
    gpu.drain()
    return int(statistics.median(_time_sleep(gpu, clock, calibration.cycles) for _ in range(2)))


def wait_behind_queue(gpu: Gpu, clock: Clock, calibration: Calibration, fn: Callable[[], object], *, repeats: int = 5) -> float:
    """How long `fn` takes with one calibrated sleep queued ahead of it, as a fraction of that
    sleep (median of `repeats`): near 1 for a call that waits for the GPU, near 0 for one that
    does not. The question the oracle asks of each line, for a single call."""
    fractions = []
    for _ in range(repeats):
        gpu.drain()
        gpu.sleep(calibration.cycles)
        began = clock()
        fn()
        fractions.append((clock() - began) / calibration.sleep_ns)
        gpu.drain()
    return statistics.median(fractions)


class QueuedPrimer:
    """Before each line: make sure at least `low_water` of a calibrated sleep is queued ahead;
    return the estimated GPU work ahead of the line, in ns."""

    mode = "queued"

    def __init__(self, gpu: Gpu, clock: Clock, calibration: Calibration, low_water: float = LOW_WATER):
        if not 0 < low_water < 1:
            raise ValueError("low_water must be between 0 and 1")
        self.gpu = gpu
        self.clock = clock
        self.calibration = calibration
        self.low_water_ns = int(low_water * calibration.sleep_ns)
        self.pending_until: int | None = None
        self.stream: object = None
        self.fresh_sleeps = 0  # how many times the queue was drained and refilled

    def start(self) -> None:
        self.gpu.drain()
        self.pending_until = None

    def before_line(self) -> int:
        now = self.clock()
        stream = self.gpu.stream_key()
        if (
            self.pending_until is None
            or stream != self.stream
            or self.pending_until - now < self.low_water_ns
            or self.gpu.sleep_done()
        ):
            self.gpu.drain()
            queued_at = self.clock()
            self.gpu.sleep(self.calibration.cycles)
            self.pending_until = queued_at + self.calibration.sleep_ns
            self.stream = stream
            self.fresh_sleeps += 1
        return max(0, self.pending_until - self.clock())

    def finish(self) -> None:
        self.gpu.drain()
        self.pending_until = None


class IdlePrimer:
    """Before each line: drain, so the line runs on an idle GPU. Returns 0 (no work ahead)."""

    mode = "idle"

    def __init__(self, gpu: Gpu):
        self.gpu = gpu

    def start(self) -> None:
        self.gpu.drain()

    def before_line(self) -> int:
        self.gpu.drain()
        return 0

    def finish(self) -> None:
        self.gpu.drain()
