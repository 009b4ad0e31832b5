"""The detector for a real GPU.

Two mechanisms, each doing what it measures best at:

* torch's sync-debug mode in `warn` sees every C++-level sync (an `.item()`, a boolean-mask
  gather, a blocking copy, ...) at almost no cost, but it tells neither which Python call it was
  nor how long the host waited, and it is blind to the explicit `synchronize()` calls and to
  `non_blocking` copies from pageable memory. We route its warning to the recorder instead of
  printing it (an "always" filter in front, so Python's once-per-line filter does not hide repeats).
* Thin timing shims on the Python entry points that can sync (`Tensor.item`, `__getitem__`,
  `torch.nonzero`, `torch.cuda.synchronize`, ...). A shim only notes the start time on a
  per-thread stack and calls through; torch flushes C++ warnings to Python before the binding
  returns, so when the warning arrives the shim that is running knows the API, classifies the
  kind from its arguments and, once the call returns, measures the host's wait as the call's wall
  time. A shim call without a warning records nothing: non-blocking cases are never reported.

We deliberately do not use `torch.cuda._gpu_trace`: activating it cannot be undone and costs
~37% on launch-bound loops (anchors.md, section 1).

Nothing here synchronizes: the shims read only tensor metadata (device, dtype, pinned flag).
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import torch

from syncscope.runtime import c10d_waits, capture_sites, hook_errors, nvtx_marks, pageable, sequence_slot
from syncscope.events import SYNC_WARNING
from syncscope.events import SyncKind as K
from syncscope.runtime.policy import HostSyncError
from syncscope.runtime.recorder import Recorder

# The kinds and predictions live in cuda_kinds; tests and the quiet detector read them here too.
from syncscope.runtime.cuda_kinds import (  # noqa: F401
    _is_cuda_tensor, _index_parts, _classify_getitem, _predict_getitem, _classify_setitem, _target_is_cuda,
    _classify_to, _classify_copy, _non_blocking, _Uninitialized, _pageable_host, _pageable_h2d,
    _holds_elements, _no_element, _predict_to, _predict_cuda, _predict_copy, _always, _fixed,
    _host_data_to_device, _on_cuda, _predict_factory, _predict_new_tensor,
)

_is_compiling = torch.compiler.is_compiling
# The detector reads metadata (device, dtype, is_pinned) of tensors it did not create; with this
# on, a tensor subclass's __torch_function__ does not see those reads (the program's own calls
# reach it as under plain python).
_no_subclass_hooks = torch._C.DisableTorchFunctionSubclass


def _pageable_copy_waited(spec: "ShimSpec", args: tuple, blocked_ns: int) -> bool | None:
    # The source is the tensor copied from: `src.to(...)`, `src.cuda(...)`, `dst.copy_(src)`.
    src = args[1] if spec.name == "copy_" else args[0]
    return pageable.copy_waited(blocked_ns, src.numel() * src.element_size())


@dataclass(frozen=True)
class ShimSpec:
    owner: Any
    name: str
    api: str
    # Called on a sync warning raised inside the call: which kind was it?
    classify: Callable[[tuple, dict], str]
    # Called before the call: a kind when the call is certain to sync (so it gets an NVTX range
    # and is recorded even if torch does not warn), else None.
    predict: Callable[[tuple, dict], str | None] | None = None


def _shim_specs() -> list[ShimSpec]:
    T = torch.Tensor
    F = torch.nn.functional
    dyn = _fixed(K.DYNAMIC_SHAPE)
    specs = [
        ShimSpec(T, "item", "Tensor.item", _fixed(K.ITEM), _always(K.ITEM)),
        ShimSpec(T, "tolist", "Tensor.tolist", _fixed(K.TOLIST), _always(K.TOLIST)),
        ShimSpec(T, "cpu", "Tensor.cpu", _fixed(K.CPU_COPY), _always(K.CPU_COPY)),
        ShimSpec(T, "numpy", "Tensor.numpy", _fixed(K.CPU_COPY), _always(K.CPU_COPY)),
        ShimSpec(T, "__bool__", "Tensor.__bool__", _fixed(K.ITEM), _always(K.ITEM)),
        ShimSpec(T, "__int__", "Tensor.__int__", _fixed(K.ITEM), _always(K.ITEM)),
        ShimSpec(T, "__float__", "Tensor.__float__", _fixed(K.ITEM), _always(K.ITEM)),
        ShimSpec(T, "__index__", "Tensor.__index__", _fixed(K.ITEM), _always(K.ITEM)),
        ShimSpec(T, "__getitem__", "Tensor.__getitem__", _classify_getitem, _predict_getitem),
        ShimSpec(T, "__setitem__", "Tensor.__setitem__", _classify_setitem),
        ShimSpec(T, "to", "Tensor.to", _classify_to, _predict_to),
        ShimSpec(T, "cuda", "Tensor.cuda", _fixed(K.H2D_COPY), _predict_cuda),
        ShimSpec(T, "copy_", "Tensor.copy_", _classify_copy, _predict_copy),
        ShimSpec(T, "new_tensor", "Tensor.new_tensor", _fixed(K.H2D_COPY), _predict_new_tensor),
        ShimSpec(T, "nonzero", "Tensor.nonzero", _fixed(K.NONZERO)),
        ShimSpec(T, "argwhere", "Tensor.argwhere", _fixed(K.NONZERO)),
        ShimSpec(T, "masked_select", "Tensor.masked_select", dyn),
        ShimSpec(T, "unique", "Tensor.unique", dyn),
        ShimSpec(T, "unique_consecutive", "Tensor.unique_consecutive", dyn),
        ShimSpec(T, "bincount", "Tensor.bincount", dyn),
        ShimSpec(T, "histc", "Tensor.histc", dyn),
        ShimSpec(T, "repeat_interleave", "Tensor.repeat_interleave", _fixed(K.REPEAT_INTERLEAVE)),
        ShimSpec(torch, "nonzero", "torch.nonzero", _fixed(K.NONZERO)),
        ShimSpec(torch, "argwhere", "torch.argwhere", _fixed(K.NONZERO)),
        ShimSpec(torch, "where", "torch.where", _fixed(K.NONZERO)),
        ShimSpec(torch, "masked_select", "torch.masked_select", dyn),
        ShimSpec(torch, "unique", "torch.unique", dyn),
        ShimSpec(torch, "unique_consecutive", "torch.unique_consecutive", dyn),
        ShimSpec(torch, "bincount", "torch.bincount", dyn),
        ShimSpec(torch, "histc", "torch.histc", dyn),
        ShimSpec(torch, "repeat_interleave", "torch.repeat_interleave", _fixed(K.REPEAT_INTERLEAVE)),
        ShimSpec(torch, "tensor", "torch.tensor", _fixed(K.H2D_COPY), _predict_factory),
        ShimSpec(torch, "as_tensor", "torch.as_tensor", _fixed(K.H2D_COPY)),
        ShimSpec(torch, "equal", "torch.equal", _fixed(K.ITEM)),
        ShimSpec(torch, "allclose", "torch.allclose", _fixed(K.ITEM)),
        ShimSpec(F, "one_hot", "torch.nn.functional.one_hot", dyn),
        ShimSpec(torch.cuda, "synchronize", "torch.cuda.synchronize", _fixed(K.DEVICE_SYNC), _fixed(K.DEVICE_SYNC)),
        ShimSpec(torch.cuda.Stream, "synchronize", "Stream.synchronize", _fixed(K.STREAM_SYNC), _fixed(K.STREAM_SYNC)),
        ShimSpec(torch.cuda.Event, "synchronize", "Event.synchronize", _fixed(K.EVENT_SYNC), _fixed(K.EVENT_SYNC)),
    ]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "synchronize"):
        specs.append(
            ShimSpec(accelerator, "synchronize", "torch.accelerator.synchronize", _fixed(K.DEVICE_SYNC), _fixed(K.DEVICE_SYNC))
        )
    return specs


def shimmed_api_names() -> frozenset[str]:
    """The Python-level APIs this detector wraps, by name (`Tensor.item`, `torch.nonzero`). A sync
    torch raises in C++ under any other torch call (`torch.full(..., fill_value=cuda_scalar)`
    reads its fill value on the host) reaches no shim: this detector records it as `other`, and
    the simulated device names it so too (sim/sync_model.py)."""
    return frozenset(spec.api for spec in _shim_specs())


def _basic_indexing_fast_path(shim: Callable, original: Callable) -> Callable:
    """Most indexing in a step cannot sync: ints, slices, None, Ellipsis, and gathers with a
    device integer index (`q[:, positions]`). Those go straight to torch, skipping the timing
    bookkeeping (a few microseconds a call on a busy host). A boolean or byte mask, a host tensor
    or a list takes the full shim. Should torch sync on a fast-path call after all, its warning
    is still recorded (kind `other`, time not measured): the fast path can lose a time, never a
    sync."""
    Tensor = torch.Tensor
    masks = (torch.bool, torch.uint8)

    def getitem(self, index):
        for part in index if type(index) is tuple else (index,):
            if isinstance(part, Tensor):
                if type(part) is Tensor:
                    on_device, dtype = part.is_cuda, part.dtype
                else:  # a subclass: reading its metadata must not call its __torch_function__
                    with _no_subclass_hooks():
                        on_device, dtype = part.is_cuda, part.dtype
                if on_device and dtype not in masks:
                    continue
                return shim(self, index)
            if isinstance(part, list):
                return shim(self, index)
        return original(self, index)

    return getitem


def _lazy_parameter_allowlist() -> list | None:
    """The methods an uninitialized (lazy) parameter lets through its `__torch_function__`
    (`.cuda()`, `.to()`, `.cpu()`, ...); torch checks the called function against it."""
    try:
        from torch.nn.parameter import UninitializedTensorMixin
    except ImportError:
        return None
    allowed = getattr(UninitializedTensorMixin, "_allowed_methods", None)
    return allowed if isinstance(allowed, list) else None


def _allow_on_lazy_parameters(original, shim, added: list, allowed: list | None, allowed_ids: set[int] | None = None) -> None:
    """A shimmed `Tensor.cuda` is what torch's C code hands to a lazy parameter's
    `__torch_function__`; without this, `model.cuda()` of an `nn.LazyLinear` raised "Attempted to
    use an uninitialized parameter" under syncscope where plain python runs (seen on the H100).
    `allowed` is `_lazy_parameter_allowlist()` and `allowed_ids` the ids of its entries, both read
    once per install (a list search per shim was most of the cost of an install)."""
    if allowed is None:
        return
    ids = allowed_ids if allowed_ids is not None else {id(entry) for entry in allowed}
    if id(original) in ids and id(shim) not in ids:
        allowed.append(shim)
        ids.add(id(shim))
        added.append(shim)


def _set_debug_mode_quietly(mode) -> None:
    """torch warns that the debug mode is a prototype each time it is switched on; that warning
    is ours, not the program's, and must not show up in its stderr."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype")
        torch.cuda.set_sync_debug_mode(mode)


def _run_as_eager_code(shim: Callable) -> None:
    """After a graph break at a shimmed call (an `.item()` in a `torch.compile`d function) the call
    runs eagerly, but Dynamo compiles the shim's own frame as a new frame, where `is_compiling()`
    is True: the shim called straight through and the sync arrived as an unnamed C++ warning
    (kind `other`) instead of the eager run's `item` (seen on CPU with a stand-in shim). "Skip this
    frame, compile what it calls" for the shim's code keeps it inlinable when traced (no graph
    break of ours) and lets it run as in eager code. A private API: where torch lacks it, the
    shim stays as it was."""
    try:
        from torch._C._dynamo import eval_frame
    except ImportError:
        return
    exec_strategy = getattr(eval_frame, "_FrameExecStrategy", None)
    action = getattr(eval_frame, "_FrameAction", None)
    if exec_strategy is None or action is None:
        return
    try:
        eval_frame.set_code_exec_strategy(shim.__code__, exec_strategy(action.SKIP, action.DEFAULT))
    except Exception as exc:
        hook_errors.note("cuda detector (torch.compile)", exc)


class CudaDetector:
    name = "cuda"

    def __init__(self) -> None:
        self._recorder: Recorder | None = None
        self._local = threading.local()
        self._originals: list[tuple[Any, str, Any, bool]] = []
        self._previous_showwarning = None
        self._previous_debug_mode = 0
        self._c10d: c10d_waits.C10dWaits | None = None
        self._capture_watch = capture_sites.CaptureBeginWatch()
        self._lazy_allowed: list = []  # shims added to the lazy parameters' allow-list
        self._specs: list[ShimSpec] | None = None
        self._shim_cache: dict[tuple[int, str], tuple[Callable, Callable]] = {}

    # -- install / uninstall -------------------------------------------------------------------
    def install(self, recorder: Recorder) -> None:
        self._recorder = recorder
        if self._specs is None:
            self._specs = _shim_specs()
        lazy_allowed = _lazy_parameter_allowlist()
        lazy_allowed_ids = {id(entry) for entry in lazy_allowed} if lazy_allowed is not None else None
        probe = torch.empty(())
        was_sequence = sequence_slot.is_sequence(probe)
        # Every original is read before any shim is set, and the shims then go in one after
        # another: a read of a class attribute between two changes gives the class a new version
        # tag, and from Python 3.13 a class that has used 1000 of them never gets one again (its
        # instances' attribute and method reads run uncached for good, ~1.9x slower in a stand-in).
        # Read-then-set per attribute spent ~20 of torch.Tensor's tags per install, so monitor
        # mode, which installs around every sampled region, ran out after ~48 cycles; this way an
        # install and its uninstall spend two (docs/runtime.md, "Installed and warm").
        planned = []
        for spec in self._wrapped(self._specs):
            # Restore exactly what was there: the owner's own attribute, or none (inherited).
            own = vars(spec.owner).get(spec.name)
            original = getattr(spec.owner, spec.name)
            planned.append((spec, own, spec.name in vars(spec.owner), original, self._shim_for(spec, original)))
        for spec, own, had_own, original, shim in planned:
            self._originals.append((spec.owner, spec.name, own, had_own))
            setattr(spec.owner, spec.name, shim)
            _allow_on_lazy_parameters(original, shim, self._lazy_allowed, lazy_allowed, lazy_allowed_ids)
        # A Python __getitem__ on torch.Tensor makes every tensor a sequence to C code, which
        # changed what torch.tensor([t0, t1]) does (sequence_slot.py).
        if not was_sequence and not sequence_slot.clear_item_slot(torch.Tensor, probe):
            hook_errors.note("cuda detector (Tensor.__getitem__)", RuntimeError("tensors read as sequences while shimmed"))
        self._previous_debug_mode = torch.cuda.get_sync_debug_mode()
        _set_debug_mode_quietly("warn")
        # c10d's C++ waits would print torch's sync warning to stderr (c10d_waits.py)
        self._c10d = c10d_waits.C10dWaits(_set_debug_mode_quietly, torch.cuda.get_sync_debug_mode, self._record_barrier)
        self._c10d.install()
        self.rearm()
        self._capture_watch.install(recorder)

    def _wrapped(self, specs: list[ShimSpec]) -> list[ShimSpec]:
        """The entry points this detector wraps (all of them here; the quiet detector fewer)."""
        return specs

    def rearm(self) -> None:
        """(Re)install the warning route. Needed after `warnings.catch_warnings()` blocks (pytest
        wraps every test in one) restore the filters and `showwarning`."""
        warnings.filterwarnings("always", message=SYNC_WARNING, category=UserWarning)
        if warnings.showwarning is not self._showwarning:
            self._previous_showwarning = warnings.showwarning
            warnings.showwarning = self._showwarning

    def uninstall(self) -> None:
        self._capture_watch.uninstall()
        if self._c10d is not None:
            self._c10d.uninstall()
            self._c10d = None
        _set_debug_mode_quietly(self._previous_debug_mode)
        allowed = _lazy_parameter_allowlist()
        if allowed is not None and self._lazy_allowed:
            ours = {id(shim) for shim in self._lazy_allowed}
            allowed[:] = [entry for entry in allowed if id(entry) not in ours]  # in place: torch holds this list
        self._lazy_allowed.clear()
        for owner, name, original, had_own in reversed(self._originals):
            if had_own:
                setattr(owner, name, original)
            else:
                delattr(owner, name)
        self._originals.clear()
        if warnings.showwarning is self._showwarning and self._previous_showwarning is not None:
            warnings.showwarning = self._previous_showwarning
        warnings.filters[:] = [
            f for f in warnings.filters if not (f[0] == "always" and getattr(f[1], "pattern", None) == SYNC_WARNING)
        ]
        self._recorder = None

    # -- the shims -----------------------------------------------------------------------------
    def _shim_for(self, spec: ShimSpec, original: Callable) -> Callable:
        """The shim wrapping `original`, made once per detector: monitor mode installs and takes
        out the same detector around every sampled step, and a re-install that reuses the shims
        costs a fraction of building ~40 closures again. A new original (someone else
        patched the attribute since) gets a new shim."""
        key = (id(spec.owner), spec.name)
        cached = self._shim_cache.get(key)
        if cached is not None and cached[0] is original:
            return cached[1]
        shim = self._make_shim(spec, original)
        self._shim_cache[key] = (original, shim)
        return shim

    def _make_shim(self, spec: ShimSpec, original: Callable) -> Callable:
        local = self._local
        predict = spec.predict
        finish = self._finish
        clock = time.perf_counter_ns

        def shim(*args, **kwargs):
            if _is_compiling():  # traced by Dynamo: stay invisible so no graph break is ours
                return original(*args, **kwargs)
            predicted = None
            if predict is not None:
                try:
                    with _no_subclass_hooks():  # reading metadata must not call a subclass's __torch_function__
                        predicted = predict(args, kwargs)
                except Exception as exc:  # a tensor kind we do not know: never the program's error
                    hook_errors.note(f"cuda detector ({spec.api})", exc)
            try:
                calls = local.calls
            except AttributeError:
                calls = local.calls = []
            # One cell per call in progress: the sync warning of torch marks the innermost one.
            synced = [False]
            calls.append(synced)
            start = clock()
            try:
                if predicted is None:
                    result = original(*args, **kwargs)
                else:
                    with nvtx_marks.blocking_range(f"sync {predicted} {spec.api}"):
                        result = original(*args, **kwargs)
            except RuntimeError as exc:
                if (predicted is not None or synced[0]) and capture_sites.refused_by_capture(exc):
                    capture_sites.record_refused(self._recorder, spec.api, sys._getframe(1))
                raise
            finally:
                calls.pop()
            if predicted is not None or synced[0]:
                finish(spec, args, kwargs, predicted, start, clock())
            return result

        _run_as_eager_code(shim)
        if spec.api == "Tensor.__getitem__":
            shim = _basic_indexing_fast_path(shim, original)
            _run_as_eager_code(shim)
        shim.__name__ = getattr(original, "__name__", spec.name)
        shim.__qualname__ = getattr(original, "__qualname__", spec.name)
        shim.__doc__ = getattr(original, "__doc__", None)
        shim.__wrapped__ = original
        return shim

    def _finish(self, spec: ShimSpec, args: tuple, kwargs: dict, predicted: str | None, start: int, end: int) -> None:
        recorder = self._recorder
        if recorder is None:
            return
        try:
            if predicted is not None:
                kind = predicted
            else:
                with _no_subclass_hooks():
                    kind = spec.classify(args, kwargs)
        except Exception as exc:
            hook_errors.note(f"cuda detector ({spec.api})", exc)
            kind = K.OTHER  # the sync happened: keep it, unclassified
        blocked_ns = end - start
        try:
            waited = _pageable_copy_waited(spec, args, blocked_ns) if kind == K.H2D_PAGEABLE else None
        except Exception as exc:
            hook_errors.note(f"cuda detector ({spec.api})", exc)
            waited = None
        try:
            event = recorder.record(kind, spec.api, blocked_ns=blocked_ns, detector="cuda", frame=sys._getframe(2), waited=waited)
        except HostSyncError:
            raise  # the error policy, asked for by the user
        except Exception as exc:
            hook_errors.note("recorder", exc)
            return
        on_sync = recorder.on_sync
        if on_sync is not None and event is not None:
            # The bubble window: the wait, and when this bookkeeping (which the device idles
            # through after a sync) was done, so it is not counted into the sync's bubble.
            on_sync(event, start, end, time.perf_counter_ns())

    def _record_barrier(self, blocked_ns: int, frame) -> None:
        recorder = self._recorder
        if recorder is not None:
            recorder.record(K.STREAM_SYNC, "torch.distributed.barrier", blocked_ns=blocked_ns, detector="cuda", frame=frame)

    # -- torch's sync warning ------------------------------------------------------------------
    def _showwarning(self, message, category, filename, lineno, file=None, line=None):
        if str(message).startswith(SYNC_WARNING) and self._recorder is not None:
            calls = getattr(self._local, "calls", None)
            if calls:
                calls[-1][0] = True  # the shim records it, timed, when the call returns
            else:
                self._unwrapped_sync(sys._getframe(1))
            return
        previous = self._previous_showwarning or warnings._showwarning_orig  # type: ignore[attr-defined]
        previous(message, category, filename, lineno, file, line)

    def _unwrapped_sync(self, frame) -> None:
        """A sync no shim wraps (e.g. inside a function imported before the trap, or a torch op we
        do not shim): attributed to the user's line, time unknown."""
        self._recorder.record(K.OTHER, "c++ sync", detector="cuda-debug-mode", frame=frame)
