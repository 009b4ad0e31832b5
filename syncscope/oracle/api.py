"""Starting an oracle session and measuring a function from Python (tests, benchmarks, notebooks).

    from syncscope.oracle.api import measure_function
    result = measure_function(step, batch, repeat=3)
    print([(r.line, r.verdict) for r in result.lines])
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from syncscope.oracle.measure import FunctionId, OracleSession, measured_code
from syncscope.oracle.timing import DEFAULT_SLEEP_NS, LOW_WATER, Gpu, calibrate
from syncscope.oracle.tracer import make_line_timer
from syncscope.oracle.verdict import LineResult, Thresholds, analyse


def start_session(
    *,
    gpu: Gpu | None = None,
    clock: Callable[[], int] = time.perf_counter_ns,
    sleep_ns: int = DEFAULT_SLEEP_NS,
    repeat: int = 3,
    warmup: int = 1,
    calls: int = 1,
    skip: int = 0,
    tracer: str = "auto",
    low_water: float = LOW_WATER,
) -> OracleSession:
    """Calibrate the sleep on the current device and return a session ready to wrap functions.
    Without `gpu`, the current CUDA device (raises `OracleUnavailable` when there is none)."""
    timer = make_line_timer(tracer)  # fail on a bad --tracer before touching the GPU
    if gpu is None:
        from syncscope.oracle.cuda import CudaGpu

        gpu = CudaGpu()
    calibration = calibrate(gpu, clock, sleep_ns)
    return OracleSession(gpu, clock, calibration, timer, repeat=repeat, warmup=warmup, calls=calls, skip=skip, low_water=low_water)


@dataclass
class MeasuredCall:
    value: Any
    lines: list[LineResult]
    session: OracleSession

    def verdicts(self) -> dict[int, str]:
        return {r.line: r.verdict for r in self.lines}


def measure_function(
    func: Callable,
    *args,
    session: OracleSession | None = None,
    thresholds: Thresholds = Thresholds(),
    label: str | None = None,
    **kwargs,
) -> MeasuredCall:
    """Measure one call of `func(*args, **kwargs)` (warm-up, repeats, idle passes)."""
    session = session or start_session()
    code = measured_code(func)
    fid = FunctionId.of(code, label or getattr(func, "__qualname__", repr(func)))
    before = len(session.samples)
    value = session.measure(func, code, fid, args, kwargs)
    return MeasuredCall(value, analyse(session.samples[before:], thresholds), session)
