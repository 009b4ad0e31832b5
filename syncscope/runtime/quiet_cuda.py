"""The CUDA detector with nothing of ours on the hot path until a sync happens (Python 3.12+).

The shim detector (runtime/cuda.py) wraps every Python entry point that can sync in a timing
shim. A serving step calls the busiest of them (`Tensor.__getitem__`, `__setitem__`, `to`,
`copy_`) hundreds of times and almost never syncs there, and each call paid for a Python frame
(docs/runtime.md has the breakdown). This detector keeps what costs nothing in sync-free code:

* torch's sync-debug mode in `warn` is the trigger, as before;
* subscripts are not wrapped at all. When the warning comes from inside one, the frame is
  stopped at the subscript; runtime/subscripts.py reads its operands back from the code (the kind:
  a device mask, a host index, a pageable source, a Python number stored);
* `to`, `cuda` and `copy_` get a slim wrapper that looks at one keyword: only a `non_blocking`
  copy goes on to the pinned-memory check (the driver makes a copy from pageable memory wait,
  and torch does not warn of it); a blocking copy that syncs is classified, and timed, from the
  wrapper's arguments and start when the warning comes;
* the other entry points keep their shims: they sync whenever they touch the device (`.item()`,
  `synchronize()`, `nonzero`, ...), so a sync-free step does not call them on device tensors;
* the host's wait at an unwrapped subscript is timed from the second sync at that instruction
  on (runtime/site_timer.py); the first is recorded with its kind, line and stack and no time.

Nothing here synchronizes: only tensor metadata is read.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Callable

import torch

from syncscope.runtime import capture_sites, hook_errors, subscripts
from syncscope.runtime.cuda import CudaDetector, ShimSpec, _is_compiling, _no_subclass_hooks, _run_as_eager_code
from syncscope.events import SyncKind as K
from syncscope.runtime.policy import HostSyncError
from syncscope.runtime.site_timer import SiteTimer

UNWRAPPED = frozenset({"Tensor.__getitem__", "Tensor.__setitem__"})
SLIM = frozenset({"Tensor.to", "Tensor.cuda", "Tensor.copy_"})
_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_MASKS = (torch.bool, torch.uint8)


class QuietCudaDetector(CudaDetector):
    name = "cuda"

    def __init__(self) -> None:
        super().__init__()
        self._timer = SiteTimer()
        self._slim_codes: set = set()  # the slim wrappers' code object

    def install(self, recorder) -> None:
        super().install(recorder)
        self._timer.install()

    def uninstall(self) -> None:
        self._timer.uninstall()
        super().uninstall()

    def _wrapped(self, specs: list[ShimSpec]) -> list[ShimSpec]:
        return [spec for spec in specs if spec.api not in UNWRAPPED]

    # -- the slim copy wrappers -------------------------------------------------------------------
    def _make_shim(self, spec: ShimSpec, original: Callable) -> Callable:
        if spec.api not in SLIM:
            return super()._make_shim(spec, original)
        timed = super()._make_shim(spec, original)  # a copy certain to wait: the full shim times it
        predict = spec.predict
        is_copy = spec.name == "copy_"
        Tensor = torch.Tensor
        clock = time.perf_counter_ns

        def slim(*args, **kwargs):
            _ = spec  # a free variable of the frame: the warning route reads which wrapper this is
            if kwargs.get("non_blocking") or (len(args) > 2 and (args[2] is True or args[-1] is True)):
                if _is_compiling():
                    return original(*args, **kwargs)
                # The common asynchronous copies, decided from plain tensors' metadata: `to` from
                # the device or from pinned memory; `copy_` onto the device from it or from pinned memory.
                if is_copy:
                    src, dst = args[1], args[0]
                    if type(src) is Tensor and type(dst) is Tensor and dst.is_cuda and (src.is_cuda or src.is_pinned()):
                        return original(*args, **kwargs)
                else:
                    src = args[0]
                    if type(src) is Tensor and (src.is_cuda or src.is_pinned()):
                        return original(*args, **kwargs)
                try:
                    with _no_subclass_hooks():
                        waits = predict(args, kwargs) is not None
                except Exception as exc:  # never the program's error
                    hook_errors.note(f"cuda detector ({spec.api})", exc)
                    waits = False
                if waits:
                    return timed(*args, **kwargs)
            start = clock()  # read from this frame if torch warns that the copy synced
            return original(*args, **kwargs)

        _run_as_eager_code(slim)
        self._slim_codes.add(slim.__code__)  # one code object for all three wrappers
        slim.__name__ = getattr(original, "__name__", spec.name)
        slim.__qualname__ = getattr(original, "__qualname__", spec.name)
        slim.__doc__ = getattr(original, "__doc__", None)
        slim.__wrapped__ = original
        return slim

    # -- a sync no running shim claims -------------------------------------------------------------
    def _unwrapped_sync(self, frame) -> None:
        end = time.perf_counter_ns()  # the wait is over: torch warns as the call returns
        recorder = self._recorder
        frame = self._issuing_frame(frame)
        if frame is None:
            return super()._unwrapped_sync(sys._getframe(1))
        try:
            arguments = frame.f_locals if frame.f_code in self._slim_codes else None
            if arguments is not None:  # a blocking copy: the wrapper holds its spec, arguments and start
                spec = arguments["spec"]
                with _no_subclass_hooks():
                    kind = spec.classify(arguments["args"], arguments["kwargs"])
                api, site, copy_start = spec.api, frame.f_back, arguments.get("start")
            else:
                found = subscripts.subscript_at(frame)
                if found is None:  # some other C++ call (an op no shim wraps)
                    kind, api = K.OTHER, "c++ sync"
                else:
                    kind, api = _subscript_kind(found, frame), ("Tensor.__setitem__" if found.store else "Tensor.__getitem__")
                site, copy_start = frame, None
        except Exception as exc:
            hook_errors.note("cuda detector (unwrapped sync)", exc)
            kind, api, site = K.OTHER, "c++ sync", frame
            copy_start = None
        if site is None:
            return super()._unwrapped_sync(frame)
        offset = subscripts.instruction_offset(site)
        start = copy_start if copy_start is not None else self._timer.started_ns(site.f_code, offset)
        related = None
        if torch.cuda.is_current_stream_capturing():  # CUDA refuses it; the call raises next
            kind, related = K.SYNC_IN_CAPTURE, capture_sites.current_capture()
        try:
            event = recorder.record(kind, api, blocked_ns=None if start is None else end - start, related=related,
                                    detector="cuda", frame=site)
        except HostSyncError:
            raise
        except Exception as exc:
            hook_errors.note("recorder", exc)
            return
        finally:
            if copy_start is None:
                self._timer.arm(site.f_code, offset)  # the next sync here is timed
        on_sync = recorder.on_sync
        if on_sync is not None and event is not None and start is not None:
            on_sync(event, start, end, time.perf_counter_ns())

    def _issuing_frame(self, frame):
        """The frame whose instruction raised the warning: above the warnings machinery and
        syncscope's own frames (a slim wrapper counts: it holds the call's arguments)."""
        slim = self._slim_codes
        while frame is not None:
            code = frame.f_code
            if code in slim:
                return frame
            filename = code.co_filename
            if not (filename.startswith(_RUNTIME_DIR) or filename.endswith(("warnings.py", "<frozen warnings>"))):
                return frame
            frame = frame.f_back
        return None


def _describe(value) -> tuple[bool, bool] | None:
    """(on the device, a boolean or byte mask) of a tensor, from its metadata."""
    if not isinstance(value, torch.Tensor):
        return None
    with _no_subclass_hooks():
        return value.is_cuda, value.dtype in _MASKS


def _subscript_kind(found: subscripts.Subscript, frame) -> str:
    """The kind of a subscript that synced, as the shim detector names it from its arguments
    (cuda_kinds._classify_getitem / _classify_setitem): the index decides first, then a stored
    value. An operand that cannot be read back without running code leaves it `other`."""
    index = subscripts.resolve(found.index, frame, _describe)
    if index is None:
        return K.OTHER
    for part in index if isinstance(index, tuple) else (index,):
        info = _tensor_info(part)
        if info is not None:
            on_device, mask, _dim = info
            if mask and on_device:
                return K.BOOL_MASK_INDEX
            if on_device is False:
                return K.HOST_INDEX  # a host mask, or a host integer index
        elif isinstance(part, (list, tuple)) and not found.store:
            return K.HOST_INDEX
    if not found.store:
        return K.OTHER
    value = subscripts.resolve(found.value, frame, _describe)
    info = _tensor_info(value)
    if info is not None:
        on_device, _mask, dim = info
        return K.H2D_COPY if on_device is False and dim != 0 else K.OTHER
    if isinstance(value, (int, float, bool)):
        return K.SCALAR_STORE
    return K.OTHER


def _tensor_info(value) -> tuple[bool | None, bool | None, int | None] | None:
    """(on the device, a mask, dimensions) of a tensor or of what is known of one; None for
    anything else."""
    if isinstance(value, subscripts.Tensorish):
        return value.cuda, value.mask, None
    if isinstance(value, torch.Tensor):
        with _no_subclass_hooks():
            return value.is_cuda, value.dtype in _MASKS, value.dim()
    return None
