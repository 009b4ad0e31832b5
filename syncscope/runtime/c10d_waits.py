"""torch.distributed calls that wait in C++ where torch's sync warning cannot reach Python.

torch turns a C++ warning into a Python one only inside the bindings that install its Python
warning handler (the tensor methods and `torch.*` functions the CUDA detector shims). The c10d
bindings do not: a synchronizing CUDA call made inside them (an NCCL `barrier()` synchronizes the
current stream; tearing a process group down may synchronize too), or on one of NCCL's own C++
threads, reaches c10's default handler, which prints
`[rank0]:[W... ProcessGroupNCCL.cpp:...] Warning: called a synchronizing CUDA operation` straight
to the program's stderr. With the detector's sync-debug mode on, every multi-GPU run would print
lines that plain python does not.

So, while the CUDA detector is installed, these calls run with the sync-debug mode off (counted,
so overlapping calls from several threads turn it back on only when the last one leaves):

* `destroy_process_group` and `_abort_process_group`: teardown, once per process; any sync in
  them is not recorded (nothing could say which Python line it belongs to beyond the call).
* `barrier` (blocking form, on a group with a CUDA backend): a real host wait, recorded as one
  `stream_sync` event at the caller's line with the call's measured time, in place of the
  warning that would have leaked. `barrier(async_op=True)` returns at once and is left alone.

While the mode is off, a C++-level sync on another thread raises no warning either: only the shims
that know their call syncs (`.item()`, `synchronize()`, ...) record it in that window.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable

TEARDOWN = ("destroy_process_group", "_abort_process_group")
BARRIER = "barrier"


class C10dWaits:
    """Installs the wrappers on `torch.distributed` and `torch.distributed.distributed_c10d`.

    `set_debug_mode(mode)` / `get_debug_mode()` switch torch's sync-debug mode (without torch's
    "prototype" warning); `record_barrier(blocked_ns, frame)` records one barrier wait."""

    def __init__(
        self,
        set_debug_mode: Callable[[int], None],
        get_debug_mode: Callable[[], int],
        record_barrier: Callable[[int, Any], None],
    ) -> None:
        self._set_debug_mode = set_debug_mode
        self._get_debug_mode = get_debug_mode
        self._record_barrier = record_barrier
        self._lock = threading.Lock()
        self._inside = 0
        self._saved_mode = 0
        self._originals: list[tuple[Any, str, Any]] = []

    # -- the debug mode, off while any wrapped call runs ---------------------------------------
    def _enter(self) -> None:
        with self._lock:
            if self._inside == 0:
                self._saved_mode = self._get_debug_mode()
                if self._saved_mode:
                    self._set_debug_mode(0)
            self._inside += 1

    def _leave(self) -> None:
        with self._lock:
            self._inside -= 1
            if self._inside == 0 and self._saved_mode:
                self._set_debug_mode(self._saved_mode)

    # -- wrappers ------------------------------------------------------------------------------
    def _quiet(self, original: Callable) -> Callable:
        def quiet(*args, **kwargs):
            self._enter()
            try:
                return original(*args, **kwargs)
            finally:
                self._leave()

        return quiet

    def _barrier(self, original: Callable, c10d: Any) -> Callable:
        def barrier(*args, **kwargs):
            if kwargs.get("async_op") or (len(args) > 1 and args[1]) or not _cuda_backend(c10d, args, kwargs):
                return original(*args, **kwargs)
            self._enter()
            start = time.perf_counter_ns()
            try:
                return original(*args, **kwargs)
            finally:
                blocked = time.perf_counter_ns() - start
                self._leave()
                self._record_barrier(blocked, sys._getframe(0))

        return barrier

    # -- install / uninstall -------------------------------------------------------------------
    def install(self, dist: Any = None, c10d: Any = None) -> None:
        """Wrap the calls in `torch.distributed` (the modules may be passed in, for tests)."""
        dist = dist if dist is not None else sys.modules.get("torch.distributed")
        if dist is None or not dist.is_available():
            return
        c10d = c10d if c10d is not None else dist.distributed_c10d
        for name in TEARDOWN + (BARRIER,):
            original = getattr(c10d, name, None)
            if original is None:
                continue
            wrapper = self._barrier(original, c10d) if name == BARRIER else self._quiet(original)
            wrapper.__name__ = original.__name__
            wrapper.__qualname__ = original.__qualname__
            wrapper.__doc__ = original.__doc__
            wrapper.__wrapped__ = original
            for module in (c10d, dist):  # torch.distributed re-exports them
                if getattr(module, name, None) is original:
                    self._originals.append((module, name, original))
                    setattr(module, name, wrapper)

    def uninstall(self) -> None:
        for module, name, original in reversed(self._originals):
            setattr(module, name, original)
        self._originals.clear()


def _cuda_backend(c10d: Any, args: tuple, kwargs: dict) -> bool:
    """Whether the barrier's group runs on a CUDA backend (NCCL): only then does it sync the GPU."""
    group = kwargs.get("group", args[0] if args else None)
    try:
        backend = str(c10d.get_backend(group))
    except (RuntimeError, ValueError, AttributeError):  # no default group: let torch raise its error
        return False
    return "nccl" in backend.lower()
