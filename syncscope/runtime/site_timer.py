"""Times the host's wait at instructions that have synced before, and nowhere else (Python 3.12+).

The quiet CUDA detector learns of a sync from torch's warning, which arrives once the wait is
over: too late to time it. So the instruction that synced is armed: `sys.monitoring` INSTRUCTION
events are switched on for its code object only, and every other instruction of that code
object turns its own event off the first time it runs (`DISABLE`), so from then on the armed
instruction alone calls back, just before it runs, and notes the time on its thread. When the
next sync warning comes from that instruction, the wait is the time since. A code object that
never synced is never instrumented: sync-free code runs nothing of ours.

Arming an instruction in a code object already instrumented must bring back the events its
instructions turned off (`restart_events`, process-wide, for every tool): each of them runs the
callback once more and turns itself off again. That happens once per new sync site.
"""

from __future__ import annotations

import threading
import time

try:
    from sys import monitoring as _monitoring
except ImportError:  # Python 3.11: the shims time the waits instead
    _monitoring = None

AVAILABLE = _monitoring is not None
_TOOL_NAME = "syncscope"


class _Started(threading.local):
    code = None
    offset = -1
    ns = 0


class SiteTimer:
    def __init__(self) -> None:
        self._armed: dict = {}  # code object -> set of armed instruction offsets
        self._tool: int | None = None
        self._started = _Started()
        self._lock = threading.Lock()

    # -- install / uninstall -------------------------------------------------------------------
    def install(self) -> bool:
        """Take a free sys.monitoring tool id; False (and no timing) when none is free. The
        instructions armed before an uninstall are armed again: monitor mode installs the same
        detector for each sampled run, and its sync sites stay timed from the first run on."""
        if _monitoring is None or self._tool is not None:
            return self._tool is not None
        for tool in (4, 3, 5):  # ids no standard tool claims (debugger 0, coverage 1, profiler 2, optimizer 5)
            if _monitoring.get_tool(tool) is None:
                try:
                    _monitoring.use_tool_id(tool, _TOOL_NAME)
                except ValueError:
                    continue
                self._tool = tool
                _monitoring.register_callback(tool, _monitoring.events.INSTRUCTION, self._instruction)
                if self._armed:
                    for code in self._armed:
                        _monitoring.set_local_events(tool, code, _monitoring.events.INSTRUCTION)
                    _monitoring.restart_events()
                return True
        return False

    def uninstall(self) -> None:
        """Give the tool id back and take every event out (the armed instructions are kept)."""
        tool, self._tool = self._tool, None
        if tool is None:
            return
        for code in list(self._armed):
            try:
                _monitoring.set_local_events(tool, code, 0)
            except ValueError:
                pass
        _monitoring.register_callback(tool, _monitoring.events.INSTRUCTION, None)
        _monitoring.free_tool_id(tool)

    # -- arming and reading ----------------------------------------------------------------------
    def arm(self, code, offset: int) -> None:
        """Time the instruction at `offset` of `code` from its next run on."""
        tool = self._tool
        if tool is None:
            return
        with self._lock:
            offsets = self._armed.get(code)
            if offsets is not None and offset in offsets:
                return
            if offsets is None:
                self._armed[code] = {offset}
                _monitoring.set_local_events(tool, code, _monitoring.events.INSTRUCTION)
            else:
                offsets.add(offset)
                _monitoring.restart_events()  # this offset may have turned its event off already

    def armed(self, code, offset: int) -> bool:
        offsets = self._armed.get(code)
        return offsets is not None and offset in offsets

    def started_ns(self, code, offset: int) -> int | None:
        """When this thread last started the instruction, if it is armed (else None)."""
        started = self._started
        if started.code is code and started.offset == offset:
            started.code = None  # one wait per start
            return started.ns
        return None

    def _instruction(self, code, offset: int):
        offsets = self._armed.get(code)
        if offsets is None or offset not in offsets:
            return _monitoring.DISABLE
        started = self._started
        started.code, started.offset, started.ns = code, offset, time.perf_counter_ns()
        return None
