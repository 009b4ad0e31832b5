"""Line boundaries inside one frame: `sys.settrace` (any Python) or `sys.monitoring` (3.12+).

A line timer runs one call of a function and calls `boundary(line)` each time a new line of the
*measured frame* starts, and `boundary(None)` when that frame ends (return or exception). Only the
frame of the measured call is traced: deeper calls, recursive calls of the same function and other
threads run untraced, so their time belongs to the line that made the call.

Standard library only; the GPU side lives in `syncscope.oracle.cuda`.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from types import CodeType
from typing import Any, Callable, Optional

Boundary = Callable[[Optional[int]], None]

TRACERS = ("auto", "settrace", "monitoring")
_TOOL_NAME = "syncscope-oracle"


class SettraceLineTimer:
    """`sys.settrace`: the global function answers 'call' events with None for every frame but the
    measured one (one cheap call per Python function call), so only that frame gets line events."""

    name = "settrace"

    def run(self, code: CodeType, boundary: Boundary, func: Callable, args: tuple, kwargs: dict) -> Any:
        measured: list = []

        def local(frame, event, arg):
            if event == "line":
                boundary(frame.f_lineno)
            elif event == "return":
                boundary(None)
            return local

        def global_(frame, event, arg):
            if not measured and frame.f_code is code:
                measured.append(frame)
                return local
            return None

        previous = sys.gettrace()
        sys.settrace(global_)
        try:
            return func(*args, **kwargs)
        finally:
            sys.settrace(previous)
            boundary(None)  # closes the last line when the frame left through an exception


_tool_id: int | None = None


def _acquire_tool() -> int:
    global _tool_id
    if _tool_id is not None:
        return _tool_id
    mon = sys.monitoring  # type: ignore[attr-defined]
    for candidate in (4, 3, 2):  # 3 and 4 are unassigned by PEP 669; 2 is the "profiler" id
        if mon.get_tool(candidate) is None:
            mon.use_tool_id(candidate, _TOOL_NAME)
            _tool_id = candidate
            return candidate
        if mon.get_tool(candidate) == _TOOL_NAME:
            _tool_id = candidate
            return candidate
    raise RuntimeError("sys.monitoring: no free tool id (tried 4, 3, 2); use --tracer settrace")


def _frame_of(code: CodeType, depth: int = 1):
    """The frame running `code`, found from a monitoring callback (the callback's caller)."""
    frame = sys._getframe(depth)
    for _ in range(4):
        if frame is None or frame.f_code is code:
            return frame
        frame = frame.f_back
    return None


class MonitoringLineTimer:
    """`sys.monitoring` (PEP 669): LINE / PY_START / PY_RETURN are enabled as *local* events on the
    measured code object only, so the rest of the program runs at full speed. Local events fire in
    every frame of that code (recursion, other threads): callbacks keep to the measured frame."""

    name = "monitoring"

    def __init__(self) -> None:
        self.tool = _acquire_tool()

    def run(self, code: CodeType, boundary: Boundary, func: Callable, args: tuple, kwargs: dict) -> Any:
        mon = sys.monitoring  # type: ignore[attr-defined]
        events = mon.events
        thread = threading.get_ident()
        state: dict = {"frame": None, "done": False}

        def on_start(c, offset):
            if c is code and state["frame"] is None and not state["done"] and threading.get_ident() == thread:
                state["frame"] = _frame_of(code, 1)

        def on_line(c, line):
            frame = state["frame"]
            if frame is not None and _frame_of(code, 1) is frame:
                boundary(line)

        def on_return(c, offset, value):
            frame = state["frame"]
            if frame is not None and _frame_of(code, 1) is frame:
                boundary(None)
                state["frame"] = None
                state["done"] = True

        tool = self.tool
        mon.register_callback(tool, events.PY_START, on_start)
        mon.register_callback(tool, events.LINE, on_line)
        mon.register_callback(tool, events.PY_RETURN, on_return)
        mon.set_local_events(tool, code, events.PY_START | events.LINE | events.PY_RETURN)
        try:
            return func(*args, **kwargs)
        finally:
            mon.set_local_events(tool, code, 0)
            for event in (events.PY_START, events.LINE, events.PY_RETURN):
                mon.register_callback(tool, event, None)
            boundary(None)


def _probe(a):
    b = a + 1
    return b


def works(timer) -> bool:
    """Does `timer` report the lines of a known function, in order, and its end?"""
    seen: list = []
    try:
        timer.run(_probe.__code__, seen.append, _probe, (1,), {})
    except Exception:
        return False
    first = _probe.__code__.co_firstlineno
    return seen[:2] == [first + 1, first + 2] and seen[-1] is None and None not in seen[:2]


def available_tracers() -> list[str]:
    return ["settrace"] + (["monitoring"] if hasattr(sys, "monitoring") else [])


def make_line_timer(name: str = "auto"):
    """`auto`: sys.monitoring on Python >= 3.12, else sys.settrace. The environment variable
    SYNCSCOPE_ORACLE_TRACER overrides `auto`."""
    if name == "auto":
        name = os.environ.get("SYNCSCOPE_ORACLE_TRACER", "auto")
    if name == "auto":
        if hasattr(sys, "monitoring"):
            try:
                timer = MonitoringLineTimer()
            except RuntimeError as exc:
                warnings.warn(f"syncscope oracle: {exc}; using sys.settrace", RuntimeWarning, stacklevel=2)
                return SettraceLineTimer()
            if works(timer):
                return timer
            warnings.warn("syncscope oracle: the sys.monitoring tracer failed its self-check; using sys.settrace", RuntimeWarning, stacklevel=2)
        return SettraceLineTimer()
    if name == "settrace":
        return SettraceLineTimer()
    if name == "monitoring":
        if not hasattr(sys, "monitoring"):
            raise ValueError(f"--tracer monitoring needs Python >= 3.12 (this is {sys.version.split()[0]})")
        try:
            timer = MonitoringLineTimer()
        except RuntimeError as exc:  # no free sys.monitoring tool id: a usage error, not a crash
            raise ValueError(f"--tracer monitoring: {exc}") from None
        if not works(timer):
            raise ValueError("--tracer monitoring: the sys.monitoring tracer failed its self-check on this Python")
        return timer
    raise ValueError(f"unknown tracer {name!r}: choose one of {', '.join(TRACERS)}")
