"""The race a GPU does not tell you about: reading a non_blocking device->host copy too early.

`host = dev.to("cpu", non_blocking=True)` (or `pinned.copy_(dev, non_blocking=True)`) returns at
once; the copy runs later on the stream. Reading `host` before an event recorded after the copy is
synchronized (or the stream, or the device) reads stale memory on real hardware: wrong results,
no error (vLLM PR 39546). The simulated device knows the order of everything, so it tracks each
such copy as pending on its stream and reports a host read of a pending buffer as an
`unsynced_d2h_read` hazard at the read, with the copy as the related site.

What covers a copy: `Event.synchronize()` / `Event.query()` returning True of an event recorded
on the copy's stream after it; `Stream.synchronize()` of that stream; `torch.cuda.synchronize()`;
any blocking sync on that stream (an `.item()` waits for everything queued before it).
What counts as a read: any torch call that takes the buffer (or a view of it) other than
metadata queries and view-making calls (`shape`, `size()`, `host[:n]`, ...), which pass the
pending state on to the views they return.
"""

from __future__ import annotations

import itertools
import sys
import threading
import weakref
from dataclasses import dataclass, field

import torch

from syncscope.events import Frame
from syncscope.events import SyncKind as K
from syncscope.runtime.sim import state

_counter = itertools.count(1)
_lock = threading.Lock()


@dataclass(eq=False)
class PendingCopy:
    site: Frame | None
    stream: object
    seq: int
    done: bool = False


@dataclass
class _Tracker:
    # id(tensor) -> (weakref to the tensor, its PendingCopy); views of a pending buffer share it.
    tensors: dict = field(default_factory=dict)
    copies: list = field(default_factory=list)


T = _Tracker()

# Set by cuda_api: returns this thread's current simulated stream.
current_stream = lambda: None  # noqa: E731

# Calls that do not read the data: metadata, and views (which inherit the pending state).
_METADATA = {
    "size", "dim", "numel", "stride", "storage_offset", "is_pinned", "data_ptr", "is_contiguous",
    "element_size", "nelement", "ndimension", "__len__", "__get__", "__set__", "untyped_storage",
    "is_floating_point", "is_complex", "get_device", "__hash__", "record_stream", "requires_grad_",
    "is_shared", "nbytes", "itemsize",
}
_VIEWS = {
    "view", "view_as", "reshape", "reshape_as", "narrow", "select", "unsqueeze", "squeeze", "flatten",
    "unflatten", "t", "transpose", "permute", "expand", "expand_as", "split", "chunk", "unbind",
    "as_strided", "detach", "movedim", "swapaxes", "swapdims", "diagonal", "alias", "unfold",
    "tensor_split", "hsplit", "vsplit", "split_with_sizes", "contiguous", "__getitem__",
}


def seq_now() -> int:
    return next(_counter)


def note_async_d2h(host: torch.Tensor) -> None:
    """A non_blocking device->host copy into `host` was just queued on the current stream."""
    recorder = state.S.recorder
    if recorder is None:
        return
    stack = recorder.user_stack(sys._getframe(1))
    copy = PendingCopy(stack[0] if stack else None, current_stream(), seq_now())
    with _lock:
        T.copies.append(copy)
        _track(host, copy)


def _track(t: torch.Tensor, copy: PendingCopy) -> None:
    key = id(t)
    T.tensors[key] = (weakref.ref(t, lambda _r, key=key: T.tensors.pop(key, None)), copy)


def complete(stream=None, upto: int | None = None) -> None:
    """Copies covered by a synchronization: on `stream` (all streams when None), queued before
    sequence number `upto` (all when None)."""
    if not T.copies:
        return
    with _lock:
        for copy in T.copies:
            if (stream is None or copy.stream is stream) and (upto is None or copy.seq < upto):
                copy.done = True
        T.copies = [c for c in T.copies if not c.done]
        for key, (ref, copy) in list(T.tensors.items()):
            if copy.done:
                T.tensors.pop(key, None)


def on_sync(kind: str, stream) -> None:
    """Hook for every sync: a blocking op waits for everything queued on the current stream."""
    if T.copies and kind not in (K.EVENT_SYNC, K.STREAM_SYNC, K.DEVICE_SYNC):
        complete(stream or current_stream())


def _pending_of(x):
    entry = T.tensors.get(id(x))
    if entry is None:
        return None
    ref, copy = entry
    if ref() is not x or copy.done:
        return None
    return copy


def check_call(args, kwargs):
    """Before a torch call: the pending copy among its arguments, if any."""
    for arg in args:
        copy = None
        if isinstance(arg, torch.Tensor):
            copy = _pending_of(arg)
        elif type(arg) in (list, tuple):
            for item in arg:
                if isinstance(item, torch.Tensor):
                    copy = _pending_of(item)
                    if copy is not None:
                        break
        if copy is not None:
            return copy
    if kwargs:
        for value in kwargs.values():
            if isinstance(value, torch.Tensor):
                copy = _pending_of(value)
                if copy is not None:
                    return copy
    return None


def is_read(name: str, func, args) -> bool:
    if name in _METADATA:
        return False
    if name == "__getitem__":
        index = args[1] if len(args) > 1 else None
        parts = index if isinstance(index, tuple) else (index,)
        # basic indexing makes a view; a tensor/list index gathers (reads)
        return any(isinstance(p, (torch.Tensor, list)) for p in parts)
    if name in _VIEWS:
        return False
    if name == "copy_" and args and _pending_of(args[0]) is not None and (len(args) < 2 or _pending_of(args[1]) is None):
        return False  # overwriting the buffer is not reading it
    return True


def propagate(copy: PendingCopy, out) -> None:
    with _lock:
        if isinstance(out, torch.Tensor):
            _track(out, copy)
        elif type(out) in (list, tuple):
            for item in out:
                if isinstance(item, torch.Tensor):
                    _track(item, copy)


def report_read(copy: PendingCopy, api: str) -> None:
    recorder = state.S.recorder
    if recorder is not None:
        recorder.record(K.UNSYNCED_D2H_READ, api, related=copy.site, detector="sim")
