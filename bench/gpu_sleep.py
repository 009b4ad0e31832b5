"""Known GPU work for the benches: `torch.cuda._sleep` calibrated once, with CUDA events.

The one definition every bench in bench/ uses (`copy_probe.py`, `reference_bench.py`): the
oracle has its own calibration in `syncscope/oracle/timing.py`, which times the sleep with the
host clock, as the oracle measures the host's wait.
"""

from __future__ import annotations

import statistics

import torch

_CALIBRATION_CYCLES = 10_000_000


def sleep_cycles_per_ms(samples: int = 5) -> float:
    """Clock cycles of `torch.cuda._sleep` per millisecond on the current device: the median of
    `samples` sleeps timed with CUDA events, after a warm-up sleep that also loads the kernel and
    raises the GPU clock."""
    torch.cuda._sleep(1_000_000)
    rates = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(_CALIBRATION_CYCLES)
        end.record()
        end.synchronize()
        rates.append(_CALIBRATION_CYCLES / start.elapsed_time(end))
    return statistics.median(rates)


def queue_sleep(ms: float, cycles_per_ms: float) -> None:
    """Put about `ms` of GPU work on the current stream without waiting for it."""
    torch.cuda._sleep(int(cycles_per_ms * ms))
