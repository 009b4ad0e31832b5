"""The Python-API layer of the simulated device: one torch-function handler.

It runs for every torch call that involves a simulated tensor (as the wrapper class's
`__torch_function__`, in every thread) and, through a `TorchFunctionMode` pushed on the threads
the device is installed on, for every torch call at all. It does what aten-level dispatch cannot:

* host->device entry points whose arguments hold no device tensor yet: factories with
  `device="cuda"`, `torch.tensor(data, device="cuda")`, `cpu_t.to("cuda")`, `.cuda()`,
  `pin_memory()` / `pin_memory=True` / `is_pinned()` (a CPU-only build has no pinned allocator);
* calls whose C++ binding takes a CUDA DeviceGuard before dispatching (indexing, `nonzero()`,
  `int(t)`, ...): replayed on `HostGuardView`s of the same data (tensor.py);
* the name of the Python call in progress, so a sync found at the aten level is reported as the
  real-GPU detector reports it (`Tensor.__setitem__`, `Tensor.tolist`, ...);
* host reads of a pending non_blocking device->host copy (race.py).

Everything else goes straight on to aten dispatch.
"""

from __future__ import annotations

import threading

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from syncscope.events import SyncKind as K
from syncscope.runtime.sim import devices, graphs, race, state, subclasses, sync_model, whole_ops
from syncscope.runtime.sim import autograd as sim_autograd
from syncscope.runtime.sim.whole_ops import has_functorch_wrapped as _has_functorch_wrapped, on_device_under_functorch
from syncscope.runtime.sim import dispatch as _dispatch_module
from syncscope.runtime.sim.no_device import needs_a_real_device
from syncscope.runtime.sim.dispatch import dispatch as _dispatch_op
from syncscope.runtime.sim.tensor import (
    HostGuardView,
    SimulatedCudaTensor,
    _SimBase,
    is_pinned,
    mark_pinned,
    holds_simulated,
    unwrap_nested,
    wrap,
    wrap_view,
)

_DisableSubclass = torch._C.DisableTorchFunctionSubclass
_capturing = graphs.capturing
_CPU = torch.device("cpu")
T = torch.Tensor
local = state.local


# -- devices -----------------------------------------------------------------------------------
_device_cache: dict = {}


def _is_cuda(device) -> bool:
    """Is this `device=` argument the (simulated) GPU? Cached: called on every factory."""
    try:
        hit = _device_cache.get(device)
    except TypeError:  # unhashable
        hit = None
    if hit is None:
        if isinstance(device, torch.device):
            hit = device.type == "cuda"
        elif isinstance(device, str):
            hit = device.startswith("cuda")
        elif isinstance(device, int) and not isinstance(device, bool):
            hit = True  # a bare index names a CUDA device
        else:
            hit = False
        try:
            _device_cache[device] = hit
        except TypeError:
            pass
    return hit


def _target_device(device) -> torch.device:
    """`cuda` (the thread's current device), `cuda:N`, `N`: one of the simulated GPUs (devices.py)."""
    return devices.resolve(device)


def _has_sim(args) -> bool:
    for arg in args:
        if isinstance(arg, _SimBase):
            return True
        if type(arg) in (list, tuple):
            for item in arg:
                if isinstance(item, _SimBase):
                    return True
    return False


# -- replay on CPU-device views (the DeviceGuard workaround) ----------------------------------------
def _to_views(value):
    if isinstance(value, SimulatedCudaTensor):
        return wrap_view(value._elem)
    if type(value) in (list, tuple):
        return type(value)(_to_views(v) for v in value)
    if type(value) is dict:
        return {k: _to_views(v) for k, v in value.items()}
    if type(value) is slice:  # `x[:, :n]` with a device tensor `n`
        return slice(_to_views(value.start), _to_views(value.stop), _to_views(value.step))
    return value


def _from_views(value, originals):
    if isinstance(value, HostGuardView):
        for original in originals:
            if isinstance(original, SimulatedCudaTensor) and original._elem is value._elem:
                return original
        device = next((o._sim_dev for o in originals if isinstance(o, _SimBase) and o._sim_dev), None)
        return wrap(value._elem, device)
    if type(value) in (list, tuple):
        return type(value)(_from_views(v, originals) for v in value)
    return value


def _replay(func, args, kwargs):
    if _has_functorch_wrapped(args):
        # Under vmap (transformers builds its attention masks so) results come back inside
        # functorch's BatchedTensors, where `_from_views` cannot reach: have dispatch.py wrap
        # them as device tensors from the start.
        previous = state.local.views_as_device
        state.local.views_as_device = True
        try:
            with _DisableSubclass():
                out = func(*_to_views(args), **_to_views(kwargs))
        finally:
            state.local.views_as_device = previous
        return _from_views(out, args)
    with _DisableSubclass():
        out = func(*_to_views(args), **_to_views(kwargs))
    return _from_views(out, args)


# -- special cases -----------------------------------------------------------------------------------
def _record_h2d(source, non_blocking: bool, api: str) -> None:
    if source.numel() == 0:
        return  # ATen's copy_ returns before any transfer when there is no element
    if non_blocking:
        if not is_pinned(source):
            state.sync(K.H2D_PAGEABLE, api)
    else:
        state.sync(K.H2D_COPY, api)


def _to(func, args, kwargs):
    self = args[0]
    if isinstance(self, _SimBase) or on_device_under_functorch(self):
        # device -> host or device -> device: aten `_to_copy`, which dispatch.py classifies (and
        # tracks when non_blocking)
        try:
            return _call(func, args, kwargs)
        except RuntimeError as exc:
            if not needs_a_real_device(exc):
                raise
        return whole_ops.to_same_device(_call, func, args, kwargs)
    device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*args[1:], **kwargs)
    if device is None or device.type != "cuda":
        return _call(func, args, kwargs)
    # host -> simulated device
    _record_h2d(self, non_blocking, "Tensor.to")
    with _DisableSubclass():
        elem = self.to(dtype=dtype or self.dtype, memory_format=memory_format or torch.preserve_format, copy=True)
    if _capturing[0]:  # a captured copy from (pinned) host memory reads it again on each replay
        graphs.note(lambda: elem.copy_(self))
    return wrap(elem, _target_device(device))


def _cuda(func, args, kwargs):
    self = args[0]
    if isinstance(self, _SimBase):
        device = kwargs.get("device", args[1] if len(args) > 1 else None)
        return whole_ops.to_other_device(self, _target_device(device))
    if on_device_under_functorch(self):
        return _call(func, args, kwargs)
    device = kwargs.get("device", args[1] if len(args) > 1 else None)
    non_blocking = bool(kwargs.get("non_blocking", args[2] if len(args) > 2 else False))
    _record_h2d(self, non_blocking, "Tensor.cuda")
    with _DisableSubclass():  # (an explicit preserve_format is refused by sparse compressed layouts)
        elem = self.clone(memory_format=kwargs["memory_format"]) if "memory_format" in kwargs else self.clone()
    if _capturing[0]:
        graphs.note(lambda: elem.copy_(self))
    return wrap(elem, _target_device(device))


def _pin_memory(func, args, kwargs):
    self = args[0]
    if isinstance(self, _SimBase):
        raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be pinned")
    if is_pinned(self):
        return self
    with _DisableSubclass():
        return mark_pinned(self.clone())


def _is_pinned(func, args, kwargs):
    return is_pinned(args[0])


def _noop(func, args, kwargs):
    return None


def _tolist(func, args, kwargs):
    self = args[0]
    if not isinstance(self, _SimBase):
        return _call(func, args, kwargs)
    if self.numel():  # an empty tensor's host copy moves nothing: no transfer, no wait on a GPU
        state.sync(K.TOLIST, "Tensor.tolist")
    return self._elem.tolist()


def _numpy(func, args, kwargs):
    if isinstance(args[0], _SimBase):
        raise TypeError(
            "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
        )
    return _call(func, args, kwargs)


def _untyped_storage(func, args, kwargs):
    self = args[0]
    return self._elem.untyped_storage() if isinstance(self, _SimBase) else _call(func, args, kwargs)


def _format(func, args, kwargs):
    """f"{t:.2f}": torch formats a 0-dim tensor through `.item()` (a sync on a GPU), but only for
    exact `torch.Tensor`s; do the same for the simulated one."""
    self, spec = args[0], args[1] if len(args) > 1 else ""
    if isinstance(self, _SimBase):
        if self.dim() == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)
    return _call(func, args, kwargs)


def _data_ptr(func, args, kwargs):
    self = args[0]
    return self._elem.data_ptr() if isinstance(self, _SimBase) else _call(func, args, kwargs)


def _new_tensor(func, args, kwargs):
    """`t.new_tensor(data)`: like torch.tensor(data) on t's device and dtype."""
    self, data = args[0], args[1] if len(args) > 1 else kwargs.get("data")
    device = kwargs.get("device", self.device)
    if not _is_cuda(device):
        return _call(func, args, kwargs)
    dtype = kwargs.get("dtype") or self.dtype
    if isinstance(data, _SimBase):  # device -> device copy
        with _DisableSubclass():
            elem = data._elem.detach().to(dtype, copy=True)
    else:
        with _DisableSubclass():
            elem = torch.tensor(data, dtype=dtype)
        if elem.numel():  # nothing to copy, no transfer (ATen's copy_ returns early)
            state.sync(K.H2D_COPY, "Tensor.new_tensor")
    out = wrap(elem, _target_device(device))
    if kwargs.get("requires_grad"):
        out.requires_grad_(True)
    return out


_COPYING_FACTORIES = {"tensor", "as_tensor", "asarray", "from_numpy", "from_file"}


def _factory(func, args, kwargs):
    """A call with `device="cuda"`: run it on the CPU, hand back a device tensor."""
    device = _target_device(kwargs["device"])
    name = getattr(func, "__name__", "")
    ukwargs = dict(kwargs)
    ukwargs["device"] = _CPU
    pinned = ukwargs.pop("pin_memory", False)
    copies = False
    if name in _COPYING_FACTORIES:
        data = args[0] if args else kwargs.get("data")
        if isinstance(data, _SimBase):
            ukwargs.pop("device")
            with _DisableSubclass():
                elem = func(data._elem, *args[1:], **ukwargs)
            if name == "as_tensor" and elem is data._elem:
                return data
            return wrap(elem, device)
        copies = True  # host data to the device: a blocking copy, unless there is no element
    elif pinned:
        raise RuntimeError("pin_memory=True is only for host tensors")
    if holds_simulated(args):  # torch.tensor([cuda_t, ...]) reads each on the host first: on a GPU item, then h2d_copy
        state.sync(sync_model.refine(K.ITEM, func, args), state.api_name(func))
        args = unwrap_nested(args)
    # Named after this call: a device tensor among the keywords (`torch.full(...,
    # fill_value=cuda_scalar)`) is read on the host by torch's argument parser.
    previous, previous_args = local.api, local.api_args
    local.api, local.api_args = func, args
    try:
        with _DisableSubclass():
            out = func(*args, **ukwargs)
    finally:
        local.api, local.api_args = previous, previous_args
    if isinstance(out, torch.Tensor):
        if copies and out.numel():  # recorded once the size is known
            state.sync(K.H2D_COPY, state.api_name(func))
        if _capturing[0]:  # a factory inside a capture fills its tensor again on each replay
            graphs.note(lambda: out.copy_(func(*args, **ukwargs)))
        return wrap(out, device)
    return out


def _pinned_factory(func, args, kwargs):
    ukwargs = dict(kwargs)
    ukwargs.pop("pin_memory")
    with _DisableSubclass():
        out = func(*args, **ukwargs)
    return mark_pinned(out) if isinstance(out, torch.Tensor) else out


def _call(func, args, kwargs):
    """The plain path: on to aten dispatch, with the Python API noted for sync naming."""
    previous, previous_args = local.api, local.api_args
    local.api, local.api_args = func, args
    try:
        with _DisableSubclass():
            return func(*args, **kwargs)
    except RuntimeError as exc:
        if needs_a_real_device(exc) and _has_sim(args):
            return _replay(func, args, kwargs)
        raise
    finally:
        local.api, local.api_args = previous, previous_args


def _replayed(func, args, kwargs):
    if not _has_sim(args):
        return _call(func, args, kwargs)
    previous, previous_args = local.api, local.api_args
    local.api, local.api_args = func, args
    try:
        return _replay(func, args, kwargs)
    finally:
        local.api, local.api_args = previous, previous_args


_BASIC_INDEX = (int, slice, type(None), type(Ellipsis))
_NoPythonDispatch = torch._C._DisableTorchDispatch


def _is_basic(index) -> bool:
    """Ints, slices, None, Ellipsis: an index that only makes a view (never syncs). bool is not
    an int here (`type(True) is bool`): `x[True]` takes the general path."""
    if type(index) is tuple:
        for part in index:
            if type(part) not in _BASIC_INDEX or (type(part) is slice and not _plain_slice(part)):
                return False
        return True
    return type(index) in _BASIC_INDEX and (type(index) is not slice or _plain_slice(index))


_SLICE_BOUNDS = (int, type(None))


def _plain_slice(part: slice) -> bool:
    """`x[:, :n]` with `n` a device tensor (transformers' beam search crops so) reads `n` on the
    host: a sync, and not a view the fast path may take."""
    return type(part.start) in _SLICE_BOUNDS and type(part.stop) in _SLICE_BOUNDS and type(part.step) in _SLICE_BOUNDS


def _getitem(func, args, kwargs):
    self, index = args
    if type(self) is SimulatedCudaTensor and _is_basic(index):
        # Fast path: a view of the CPU data, no replay needed.
        with _NoPythonDispatch():
            return wrap(self._elem[index], self._sim_dev)
    return _replayed(func, args, kwargs)


def _setitem(func, args, kwargs):
    self, index, value = args
    if type(self) is SimulatedCudaTensor and _is_basic(index):
        if type(value) is SimulatedCudaTensor:  # device -> device: never a sync
            elem, source = self._elem, value._elem
            with _NoPythonDispatch():
                elem[index] = source
            if _capturing[0]:
                graphs.note(lambda: elem.__setitem__(index, source))
            return None
        if type(value) in (int, float):
            with _NoPythonDispatch():
                target = self._elem[index]
            if target.dim() == 0:
                # torch copies the number from a host tensor into a single element: a blocking
                # H2D copy (`x[i] = 5.0`); a bigger target is a fill_ (`x[a:b] = 5.0`), free.
                state.sync(K.SCALAR_STORE, "Tensor.__setitem__")
            with _NoPythonDispatch():
                target.fill_(value)
            if _capturing[0]:
                graphs.note(lambda: target.fill_(value))
            return None
    return _replayed(func, args, kwargs)


_SPECIAL: dict = {}


def _build_special() -> None:
    replayed = [
        T.nonzero, torch.nonzero, T.__int__, T.__index__, T.argwhere,
        torch.argwhere,
    ]  # others that hit the guard are caught by `_call` and replayed too
    for func in replayed:
        _SPECIAL[func] = _replayed
    _SPECIAL.update(
        {
            T.__getitem__: _getitem,
            T.__setitem__: _setitem,
            T.to: _to,
            T.cuda: _cuda,
            T.pin_memory: _pin_memory,
            T.is_pinned: _is_pinned,
            T.record_stream: _noop,
            T.tolist: _tolist,
            T.numpy: _numpy,
            T.data_ptr: _data_ptr,
            T.untyped_storage: _untyped_storage,
            T.__format__: _format,
            T.new_tensor: _new_tensor,
            torch.nn.functional.scaled_dot_product_attention: lambda f, a, k: whole_ops.run_whole_on_cpu(_call, f, a, k),
        }
    )


_build_special()
_SPECIAL.update(sim_autograd.handlers(_has_sim))  # the autograd surface of a wrapper: autograd.py


def handle(func, args, kwargs):
    """The one torch-function handler (mode and subclass)."""
    if kwargs is None:
        kwargs = {}
    if race.T.tensors:
        copy = race.check_call(args, kwargs)
        if copy is not None:
            name = getattr(func, "__name__", "")
            if race.is_read(name, func, args):
                race.report_read(copy, state.api_name(func))
            else:
                out = _dispatch_call(func, args, kwargs)
                if name not in race._METADATA:
                    race.propagate(copy, out)
                return out
    return _dispatch_call(func, args, kwargs)


def _dispatch_call(func, args, kwargs):
    special = _SPECIAL.get(func)
    if special is not None:
        return special(func, args, kwargs)
    if kwargs:
        device = kwargs.get("device")
        if device is not None and _is_cuda(device):
            return _factory(func, args, kwargs)
        if kwargs.get("pin_memory"):
            return _pinned_factory(func, args, kwargs)
    return _call(func, args, kwargs)


class SimulatedDispatchMode(TorchDispatchMode):
    """Catches what C++ creates on the device by itself: a composite op (scaled_dot_product_attention's
    causal mask, a decomposition's `at::empty(..., self.options())`) allocates with the device
    tensor's options, with no device tensor among the arguments, so neither the Python-API layer
    nor the wrapper's `__torch_dispatch__` sees it. Ops that do involve simulated tensors are
    handed straight to dispatch.py (one Python hop instead of two)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # torch would wrap __torch_dispatch__ in torch._disable_dynamo (a few us per op); this
        # mode is never traced by Dynamo (the simulated device does not support torch.compile).
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not installed[0]:  # a thread that outlived the trap: step aside
            return func(*args, **kwargs)
        for arg in args:
            if isinstance(arg, _SimBase):
                return _dispatch_op(type(arg), func, args, kwargs)
            if type(arg) in (list, tuple):
                for item in arg:
                    if isinstance(item, _SimBase):
                        return _dispatch_op(type(item), func, args, kwargs)
        if kwargs:
            for value in kwargs.values():
                if isinstance(value, _SimBase):
                    return _dispatch_op(type(value), func, args, kwargs)
            device = kwargs.get("device")
            if device is not None and device.type == "cuda":  # (a wrapper subclass moves its inner tensor itself)
                return _dispatch_op(SimulatedCudaTensor, func, args, kwargs) if not subclasses.wrapper_in(types) else NotImplemented
        return func(*args, **kwargs)


class SimulatedCudaMode(TorchFunctionMode):
    """Pushed on each thread that runs with the simulated device, so calls that hold no device
    tensor yet (factories, `cpu_t.to("cuda")`) are seen too."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if not installed[0]:  # a thread that outlived the trap: step aside
            return func(*args, **(kwargs or {}))
        if types and subclasses.goes_first(types):  # a user subclass's own __torch_function__ runs first
            return subclasses.their_torch_function(self, func, types, args, kwargs)
        return handle(func, args, kwargs)


_dispatch_module.dispatch_mode = SimulatedDispatchMode


def _subclass_torch_function(cls, func, types, args=(), kwargs=None):
    return handle(func, args, kwargs)


def enable_subclass_handler() -> None:
    SimulatedCudaTensor.__torch_function__ = classmethod(_subclass_torch_function)


def disable_subclass_handler() -> None:
    SimulatedCudaTensor.__torch_function__ = torch._C._disabled_torch_function_impl


# -- threads ------------------------------------------------------------------------------------------
# Modes pushed on threads started while installed stay on those threads until they end; once the
# device is uninstalled they pass every call through.
installed = [False]

class ThreadModes:
    """Push the mode on the installing thread and on every thread started while installed."""

    def __init__(self) -> None:
        self._mode: SimulatedCudaMode | None = None
        self._original_bootstrap = None

    def install(self) -> None:
        installed[0] = True
        self._mode = SimulatedCudaMode()
        self._dispatch_mode = SimulatedDispatchMode()
        self._mode.__enter__()
        self._dispatch_mode.__enter__()
        original = threading.Thread._bootstrap_inner
        self._original_bootstrap = original
        owner = self

        def _bootstrap_inner(thread):
            if owner._mode is None:
                return original(thread)
            with SimulatedCudaMode(), SimulatedDispatchMode():
                return original(thread)

        threading.Thread._bootstrap_inner = _bootstrap_inner

    def uninstall(self) -> None:
        installed[0] = False
        if self._original_bootstrap is not None:
            threading.Thread._bootstrap_inner = self._original_bootstrap
            self._original_bootstrap = None
        for attr in ("_dispatch_mode", "_mode"):
            mode = getattr(self, attr, None)
            setattr(self, attr, None)
            if mode is not None:
                try:
                    mode.__exit__(None, None, None)
                except Exception:  # popped already (uninstall from another thread): nothing to undo
                    pass

