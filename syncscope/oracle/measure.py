"""Measuring calls: each call of a scoped function is repeated, line by line, behind a full queue
and on an idle GPU. Standard library only (the GPU and the clock are injected).

For one program call of a scoped function the session runs: `warmup` untraced calls (lazy init,
allocator warm-up), then `repeat` x (one pass with work queued ahead of every line, one pass on an
idle GPU), interleaved so slow drifts hit both alike. The program gets the last call's return
value. Calls made while a measurement runs (nested scoped functions, other threads) pass through
untraced; so do calls before `skip` and after `calls` measured ones.
"""

from __future__ import annotations

import functools
import inspect
import threading
from dataclasses import dataclass, field
from types import CodeType
from typing import Any, Callable

from syncscope.oracle.timing import Calibration, Clock, Gpu, IdlePrimer, QueuedPrimer


@dataclass
class PassRecord:
    """One traced call: per line, the host time of each hit and the GPU work estimated ahead."""

    mode: str  # "queued" or "idle"
    hits: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # line -> [(host_ns, ahead_ns)]
    completed: bool = False

    def add(self, line: int, host_ns: int, ahead_ns: int) -> None:
        self.hits.setdefault(line, []).append((host_ns, ahead_ns))

    @property
    def line_hits(self) -> int:
        return sum(len(v) for v in self.hits.values())


class LineRecorder:
    """The `boundary` callback of a line timer: closes the running line, primes the queue for the
    next one, and starts its clock last, so the oracle's own work is never inside a timed line."""

    def __init__(self, primer, clock: Clock, record: PassRecord):
        self.primer = primer
        self.clock = clock
        self.record = record
        self.current: int | None = None
        self.started = 0
        self.ahead = 0

    def boundary(self, line: int | None) -> None:
        end = self.clock()
        if self.current is not None:
            self.record.add(self.current, end - self.started, self.ahead)
            self.current = None
        if line is None:
            return
        self.ahead = self.primer.before_line()
        self.current = line
        self.started = self.clock()


@dataclass
class FunctionId:
    filename: str
    qualname: str
    firstlineno: int
    label: str  # the --scope spec (or qualified name) it was measured as

    @classmethod
    def of(cls, code: CodeType, label: str) -> "FunctionId":
        return cls(code.co_filename, getattr(code, "co_qualname", code.co_name), code.co_firstlineno, label)


@dataclass
class CallSample:
    """All passes of one measured program call."""

    function: FunctionId
    queued: list[PassRecord] = field(default_factory=list)
    idle: list[PassRecord] = field(default_factory=list)
    wall_ns: int = 0  # the whole measurement: warm-up, all passes, the oracle's own waits


def measured_code(func: Callable) -> CodeType:
    """The code whose lines are timed: the innermost wrapped function (`functools.wraps`
    decorators such as `torch.no_grad()` keep `__wrapped__`)."""
    inner = inspect.unwrap(func)
    code = getattr(inner, "__code__", None)
    if code is None:
        raise ValueError(f"{func!r} is not a Python function: nothing to trace line by line")
    if inspect.isgeneratorfunction(inner) or inspect.iscoroutinefunction(inner) or inspect.isasyncgenfunction(inner):
        raise ValueError(f"{code.co_name}: generator and async functions are not supported; scope the function that drives them")
    return code


class OracleSession:
    def __init__(
        self,
        gpu: Gpu,
        clock: Clock,
        calibration: Calibration,
        timer,
        *,
        repeat: int = 3,
        warmup: int = 1,
        calls: int = 1,
        skip: int = 0,
        low_water: float = 0.5,
    ):
        if repeat < 1:
            raise ValueError("--repeat must be at least 1")
        if warmup < 0 or calls < 1 or skip < 0:
            raise ValueError("--warmup and --skip must be >= 0, --calls >= 1")
        self.gpu = gpu
        self.clock = clock
        self.calibration = calibration
        self.timer = timer
        self.repeat = repeat
        self.warmup = warmup
        self.calls = calls
        self.skip = skip
        self.low_water = low_water
        self.samples: list[CallSample] = []
        self.fresh_sleeps = 0
        self._active = False
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def wrap(self, func: Callable, label: str) -> Callable:
        """A wrapper that measures `func`'s calls (the first `skip` and those after `calls`
        measured ones pass through)."""
        code = measured_code(func)
        fid = FunctionId.of(code, label)

        @functools.wraps(func)
        def oracle_measured(*args, **kwargs):
            with self._lock:
                take = False
                if not self._active:  # calls made during a measurement are its own repetitions
                    seen = self._counts.get(label, 0)
                    self._counts[label] = seen + 1
                    take = self.skip <= seen < self.skip + self.calls
                    self._active = take
            if not take:
                return func(*args, **kwargs)
            try:
                return self.measure(func, code, fid, args, kwargs)
            finally:
                self._active = False

        oracle_measured.__syncscope_oracle__ = True  # type: ignore[attr-defined]
        return oracle_measured

    def measure(self, func: Callable, code: CodeType, fid: FunctionId, args: tuple, kwargs: dict) -> Any:
        sample = CallSample(fid)
        self.samples.append(sample)
        began = self.clock()
        try:
            result = None
            for _ in range(self.warmup):
                result = func(*args, **kwargs)
            for _ in range(self.repeat):
                for primer, passes in (
                    (QueuedPrimer(self.gpu, self.clock, self.calibration, self.low_water), sample.queued),
                    (IdlePrimer(self.gpu), sample.idle),
                ):
                    record = PassRecord(primer.mode)
                    passes.append(record)
                    recorder = LineRecorder(primer, self.clock, record)
                    primer.start()
                    try:
                        result = self.timer.run(code, recorder.boundary, func, args, kwargs)
                    finally:
                        primer.finish()
                        self.fresh_sleeps += getattr(primer, "fresh_sleeps", 0)
                    record.completed = True
            return result
        finally:
            sample.wall_ns = self.clock() - began
