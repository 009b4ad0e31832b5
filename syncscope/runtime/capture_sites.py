"""A host sync inside a CUDA graph capture, on the real GPU.

CUDA refuses it: the call raises "operation not permitted when stream is capturing" and the
capture is invalidated. The sync never completes, so the detector's normal path (record when
the call returns) would not see it, and the only sync left to report is the device
synchronize of the `with torch.cuda.graph(...)` line. Here the refused call is recorded as kind
`sync_in_capture` at its own line (the `.item()`), with `related` = the line where the capture
began, the same event the simulated device reports (sim/graphs.py).

Where the capture began: `CUDAGraph.capture_begin` (which `torch.cuda.graph` and
`make_graphed_callables` call) is wrapped while the detector is installed; per thread, as a
capture is per stream.
"""

from __future__ import annotations

import sys
import threading

from syncscope.events import Frame
from syncscope.events import SyncKind as K

_REFUSALS = ("operation not permitted when stream is capturing", "StreamCapture")


class _Began(threading.local):
    frame: Frame | None = None


_began = _Began()


def refused_by_capture(exc: BaseException) -> bool:
    text = str(exc)
    return any(marker in text for marker in _REFUSALS)


def current_capture() -> Frame | None:
    """The user's line where this thread's capture began (None if unknown)."""
    return _began.frame


def record_refused(recorder, api: str, frame) -> None:
    if recorder is not None:
        recorder.record(K.SYNC_IN_CAPTURE, api, related=_began.frame, detector="cuda", frame=frame)


class CaptureBeginWatch:
    """Wraps `torch.cuda.graphs.CUDAGraph.capture_begin` to remember the user's line."""

    def __init__(self) -> None:
        self._owner = None
        self._original = None

    def install(self, recorder) -> None:
        graphs = sys.modules.get("torch.cuda.graphs")
        owner = getattr(graphs, "CUDAGraph", None)
        original = vars(owner).get("capture_begin") if owner is not None else None
        if original is None:
            return

        def capture_begin(graph, *args, **kwargs):
            stack = recorder.user_stack(sys._getframe(1))
            _began.frame = stack[0] if stack else None
            return original(graph, *args, **kwargs)

        capture_begin.__wrapped__ = original
        self._owner, self._original = owner, original
        owner.capture_begin = capture_begin

    def uninstall(self) -> None:
        if self._owner is not None:
            self._owner.capture_begin = self._original
        self._owner = self._original = None
        _began.frame = None
