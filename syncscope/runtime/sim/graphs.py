"""CUDA graphs on the simulated device: `torch.cuda.CUDAGraph`, `torch.cuda.graph`,
`make_graphed_callables`, `graph_pool_handle`, `is_current_stream_capturing`.

What a program relies on, kept:
- capture runs the ops (on a GPU it only records them; here running them is free and leaves the
  static outputs holding the values of that run) and records each one, so `replay()` re-runs
  them on the same tensors: new inputs copied into the static inputs give new static outputs,
  with no new tensors, exactly the contract of a GPU graph;
- entering `torch.cuda.graph(...)` synchronizes the device first, as torch does (a
  `device_sync` at the `with` line on both devices);
- a host sync inside a capture is what the GPU refuses ("operation not permitted when stream is
  capturing") and the capture is then invalidated: it is reported as kind `sync_in_capture` at
  the syncing line, with `related` = the line where the capture began, and raised as the same
  RuntimeError the GPU raises. `SYNCSCOPE_SIM_CAPTURE_SYNC=record` records it and carries on
  (the capture is still marked invalid, so `capture_end` fails as on the GPU).

Recording is at the aten level (dispatch.py hands every op run during a capture to `record`),
plus the few device writes the Python-API layer does itself (mode.py calls `note`). A step
replays on the CPU tensors the wrappers hold: an in-place op or a view needs nothing more; an
op that made a new tensor copies its fresh result into the tensor made at capture time.

A capture belongs to the thread that began it (a GPU capture to its stream; other threads'
syncs under the "global" error mode are not modelled).
"""

from __future__ import annotations

import itertools
import os
import sys

import torch

from syncscope.events import Frame
from syncscope.events import SyncKind as K
from syncscope.runtime.sim import state

capturing = [False]  # any capture in progress in the process: dispatch.py's one cheap test
_open_captures = [0]
_pool_ids = itertools.count(1)
_NoPythonDispatch = torch._C._DisableTorchDispatch
_CAPTURE_REFUSED = "CUDA error: operation not permitted when stream is capturing"


class _Capture:
    """One capture in progress on a thread."""

    def __init__(self, graph: "SimCUDAGraph", began: Frame | None) -> None:
        self.graph = graph
        self.began = began
        self.steps: list = []
        self.invalidated_by: str | None = None


def _active() -> _Capture | None:
    return getattr(state.local, "capture", None)


# -- recording ---------------------------------------------------------------------------------------
def record(func, uargs, ukwargs, out) -> None:
    """An aten op just ran on the CPU tensors `uargs` giving `out` (dispatch.py)."""
    capture = _active()
    if capture is None:
        return
    capture.steps.append(_AtenStep(func, uargs, ukwargs, out))


def note(step) -> None:
    """A device write done outside aten dispatch (a fast path of mode.py): `step()` redoes it."""
    capture = _active()
    if capture is not None:
        capture.steps.append(step)


class _AtenStep:
    __slots__ = ("func", "args", "kwargs", "out", "is_view")

    def __init__(self, func, args, kwargs, out) -> None:
        self.func, self.args, self.kwargs, self.out = func, args, kwargs, out
        self.is_view = bool(getattr(func, "is_view", False))

    def __call__(self) -> None:
        fresh = self.func(*self.args, **self.kwargs)
        if not self.is_view:
            _copy_into(self.out, fresh)


def _copy_into(kept, fresh) -> None:
    if isinstance(kept, torch.Tensor):
        if isinstance(fresh, torch.Tensor) and fresh is not kept and fresh.shape == kept.shape:
            kept.copy_(fresh)
    elif type(kept) in (tuple, list) and type(fresh) in (tuple, list):
        for k, f in zip(kept, fresh):
            _copy_into(k, f)


# -- a sync inside a capture ------------------------------------------------------------------------
def on_sync(kind: str, api: str) -> bool:
    """Called by state.sync for every sync. True: handled here (the GPU refuses it)."""
    capture = _active()
    if capture is None:
        return False
    capture.invalidated_by = api
    recorder = state.S.recorder
    if recorder is not None:
        recorder.record(K.SYNC_IN_CAPTURE, api, related=capture.began, detector="sim")
    if os.environ.get("SYNCSCOPE_SIM_CAPTURE_SYNC", "error") != "record":
        began = f" (capture began at {capture.began.path}:{capture.began.line})" if capture.began else ""
        raise RuntimeError(
            f"{_CAPTURE_REFUSED} (syncscope simulated device: {api} ({kind}) is a host sync, "
            f"which a CUDA graph capture cannot contain{began})"
        )
    return True


def _user_frame() -> Frame | None:
    recorder = state.S.recorder
    if recorder is None:
        return None
    stack = recorder.user_stack(sys._getframe(2))
    return stack[0] if stack else None


# -- the torch.cuda surface ----------------------------------------------------------------------------
class SimCUDAGraph:
    """`torch.cuda.CUDAGraph` of the simulated device."""

    def __init__(self, keep_graph: bool = False) -> None:
        self._steps: list = []
        self._captured = False
        self._pool = (0, next(_pool_ids))

    def capture_begin(self, pool=None, capture_error_mode: str = "global") -> None:
        if _active() is not None:
            raise RuntimeError("Cannot begin a CUDA graph capture while another capture is in progress on this thread")
        if pool is not None:
            self._pool = tuple(pool) if isinstance(pool, (tuple, list)) else (0, pool)
        state.local.capture = _Capture(self, _user_frame())
        _open_captures[0] += 1
        capturing[0] = True

    def capture_end(self) -> None:
        capture = _active()
        if capture is None or capture.graph is not self:
            raise RuntimeError("capture_end() without a matching capture_begin() on this thread")
        _close()
        if capture.invalidated_by is not None:
            raise RuntimeError(
                "CUDA error: operation failed due to a previous error during capture (syncscope "
                f"simulated device: {capture.invalidated_by} synchronized inside the capture)"
            )
        self._steps = capture.steps
        self._captured = True

    def _abandon(self) -> None:
        capture = _active()
        if capture is not None and capture.graph is self:
            _close()

    def replay(self) -> None:
        if not self._captured:
            raise RuntimeError("CUDA graph replay(): nothing was captured (call capture_begin/capture_end first)")
        with _NoPythonDispatch():  # the steps hold plain CPU tensors only
            for step in self._steps:
                step()

    def instantiate(self) -> None:
        pass

    def reset(self) -> None:
        self._steps = []
        self._captured = False

    def pool(self):
        return self._pool

    def enable_debug_mode(self) -> None:
        pass

    def debug_dump(self, debug_path: str) -> None:
        with open(debug_path, "w") as f:
            f.write(f"syncscope simulated CUDA graph: {len(self._steps)} recorded steps\n")

    def raw_cuda_graph(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<torch.cuda.CUDAGraph (syncscope simulated, {len(self._steps)} steps)>"


def _close() -> None:
    state.local.capture = None
    _open_captures[0] = max(0, _open_captures[0] - 1)
    capturing[0] = _open_captures[0] > 0


class graph:
    """`with torch.cuda.graph(g, pool=None, stream=None, capture_error_mode="global"):`"""

    default_capture_stream = None

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode: str = "global") -> None:
        from syncscope.runtime.sim import cuda_api

        if graph.default_capture_stream is None:
            graph.default_capture_stream = cuda_api.SimStream()
        self.pool = () if pool is None else (pool,)
        self.capture_stream = stream if stream is not None else graph.default_capture_stream
        self.stream_ctx = cuda_api.StreamContext(self.capture_stream)
        self.cuda_graph = cuda_graph
        self.capture_error_mode = capture_error_mode

    def __enter__(self) -> None:
        # torch does the same: finish pending work, then capture on a side stream
        torch.cuda.synchronize()
        self.stream_ctx.__enter__()
        self.cuda_graph.capture_begin(*self.pool, capture_error_mode=self.capture_error_mode)

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.cuda_graph.capture_end()
            else:  # the body's own error is the one to show
                abandon = getattr(self.cuda_graph, "_abandon", None)
                if abandon is not None:
                    abandon()
        finally:
            self.stream_ctx.__exit__(exc_type, exc, tb)
        return False


def graph_pool_handle():
    return (0, next(_pool_ids))


def is_current_stream_capturing() -> bool:
    return _active() is not None


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False, pool=None):
    """Warm each callable up, capture one call of it, and hand back a callable that copies new
    inputs into the captured ones and replays (the forward half of torch's: autograd is not
    simulated)."""
    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    torch.cuda.synchronize()
    results = []
    for fn, args in zip(callables, sample_args):
        args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        for _ in range(num_warmup_iters):
            fn(*args)
        g = SimCUDAGraph()
        with graph(g, pool=pool):
            static_out = fn(*args)
        results.append(_graphed(fn, g, args, static_out))
    return results[0] if just_one else tuple(results)


def _graphed(fn, g: SimCUDAGraph, static_in: tuple, static_out):
    def run(*inputs):
        for kept, new in zip(static_in, inputs):
            if isinstance(kept, torch.Tensor) and kept.data_ptr() != new.data_ptr():
                kept.copy_(new)
        g.replay()
        return static_out

    if isinstance(fn, torch.nn.Module):
        fn.forward = run
        return fn
    return run


def install(p) -> None:
    cuda = torch.cuda
    values = {
        "CUDAGraph": SimCUDAGraph,
        "graph": graph,
        "graph_pool_handle": graph_pool_handle,
        "is_current_stream_capturing": is_current_stream_capturing,
        "make_graphed_callables": make_graphed_callables,
    }
    graphs_module = sys.modules.get("torch.cuda.graphs")
    for name, value in values.items():
        p.set(cuda, name, value)
        if graphs_module is not None and hasattr(graphs_module, name):
            p.set(graphs_module, name, value)
    state.capture_hooks[:] = [on_sync]


def uninstall() -> None:
    state.capture_hooks[:] = []
    state.local.capture = None
    _open_captures[0] = 0
    capturing[0] = False
