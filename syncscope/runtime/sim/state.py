"""Process-wide state of the simulated device: the recorder it reports to, the device it claims to
be, what the current thread is doing at the Python API level, and the one function every sync
goes through."""

from __future__ import annotations

import threading
import warnings

import torch

from syncscope.events import SYNC_WARNING, Frame

DEVICE = torch.device("cuda", 0)
DEVICE_NAME = "syncscope simulated CUDA device (CPU-backed)"


class _Thread(threading.local):
    # The outermost Python-level torch call in progress on this thread (func, args), so a sync
    # found at the aten level can be named and classified as the real-GPU detector does
    # (`y[3] = 5.0` is a scalar_store, not a plain host->device copy).
    api = None
    api_args: tuple = ()
    capture = None  # the CUDA graph capture in progress on this thread (graphs.py)
    views_as_device = False  # a replay under vmap: results are device tensors (mode._replay)


local = _Thread()


class _State:
    recorder = None  # a syncscope Recorder while a trap with device="sim" is installed
    # torch.cuda.set_sync_debug_mode emulation: 0 off, 1 warn, 2 error (C++-level syncs only,
    # exactly the ones torch's own mode would flag).
    debug_mode = 0


S = _State()

# Called on every sync with (kind, stream_or_None): race.py completes the pending copies it
# covers. Set by the detector at install.
on_sync_hooks: list = []
# Asked first on every sync: a sync inside a CUDA graph capture is not a sync but a failed
# capture (graphs.on_sync); a hook returning True has reported it. Set by graphs.install.
capture_hooks: list = []


def api_name(func) -> str:
    name = _API_NAMES.get(func)
    if name is None:
        base = getattr(func, "__name__", None) or repr(func)
        owner = getattr(func, "__objclass__", None)
        if owner is not None or getattr(func, "__qualname__", "").startswith(("Tensor.", "TensorBase.")):
            name = f"Tensor.{base}"
        else:
            module = getattr(func, "__module__", None) or "torch"
            if module.startswith("torch._C._nn"):
                module = "torch.nn.functional"
            elif module.startswith(("torch._C", "torch.functional", "torch._VariableFunctions")):
                module = "torch"
            name = f"{module}.{base}"
        _API_NAMES[func] = name
    return name


_API_NAMES: dict = {}


def sync(kind: str, api: str, *, related: Frame | None = None, stream=None, cxx: bool = True) -> None:
    """One host sync that a GPU would have had, now, on this thread. `cxx`: a C++-level sync
    (the kind torch's sync-debug mode flags), as opposed to an explicit synchronize() call."""
    if local.capture is not None:
        for hook in capture_hooks:
            if hook(kind, api):
                return
    if cxx and S.debug_mode and kind != "h2d_pageable":  # torch's mode misses pageable staging
        if S.debug_mode >= 2:
            raise RuntimeError(SYNC_WARNING)
        warnings.warn(SYNC_WARNING, UserWarning, stacklevel=2)
    recorder = S.recorder
    if recorder is not None:
        recorder.record(kind, api, related=related, detector="sim")
    for hook in on_sync_hooks:
        hook(kind, stream)


def current_api() -> str | None:
    func = local.api
    return api_name(func) if func is not None else None
