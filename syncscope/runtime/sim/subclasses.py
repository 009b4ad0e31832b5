"""The program's own tensor subclasses on the simulated device.

On a GPU a program's tensor subclasses ride on CUDA tensors as on CPU ones: a subclass with a
`__torch_function__` (a logging tensor, a units type, or just torch's default one, which hands
results back as the subclass) sees every call made on it; `cuda_t.as_subclass(cls)` makes one;
a wrapper subclass with its own `__torch_dispatch__` (DTensor-style: an outer tensor without
storage around an inner one) moved with `.to("cuda")` moves its inner tensor. Here a device
tensor is our wrapper class, so each of these needs a hand:

* `sim_class(cls)`: the simulated-device variant of a user class, `cls(cls, _Variant)`: same name,
  `isinstance(t, cls)` holds, cls's own `__torch_function__` is found first and its `super()` call
  lands on `_Variant`, which does what `torch.Tensor.__torch_function__` does (run the call, hand
  results back as the class: device results as the variant, host results as cls itself).
* `as_subclass` (patched while installed: torch's torch-function layer never sees it) of a device
  tensor makes the variant around the same data, as on a GPU (same memory).
* The torch-function mode goes first for every call on its thread, and it calls torch with
  subclass handling off; for a call involving a user subclass it calls the subclasses' own
  `__torch_function__` instead (torch's order: subclasses first), with the mode pushed again so
  that the call they make (`super().__torch_function__`, with subclass handling off) comes back
  to the simulated device.
* A move of a wrapper subclass is left to its own `__torch_dispatch__` (the dispatch mode steps
  aside with NotImplemented, torch's protocol for a mode that does not know a subclass): its
  inner tensor then moves through the simulated device like any host tensor.
"""

from __future__ import annotations

import threading

import torch

from syncscope.runtime.sim import state
from syncscope.runtime.sim.tensor import SimulatedCudaTensor, _SimBase, _wrapper_around

_DisableSubclass = torch._C.DisableTorchFunctionSubclass
_tf_enabled = torch._C._is_torch_function_enabled
_DISABLED_TF = torch._C._disabled_torch_function_impl
_DISABLED_TD = torch._C._disabled_torch_dispatch_impl
_Lazy = torch.nn.parameter.UninitializedTensorMixin  # lazy_params.py handles placeholders


class _Variant(SimulatedCudaTensor):
    """Base of the simulated-device variants of user subclasses (see `sim_class`)."""

    _user_class: type = torch.Tensor

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        # torch.Tensor.__torch_function__, with the simulated device underneath
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        kwargs = kwargs or {}
        with _DisableSubclass():
            if _local.pushed_again:  # the mode, pushed again, handles the call
                result = func(*args, **kwargs)
            else:  # a thread without the mode: the subclass handler's work
                result = _handle[0](func, args, kwargs)
            if func in _NOWRAP:
                return result
            return convert(result, cls._user_class)

    def __repr__(self, *, tensor_contents=None):
        text = SimulatedCudaTensor.__repr__(self)  # torch names a subclass in place of "tensor"
        return type(self).__name__ + text[len("tensor") :] if text.startswith("tensor(") else text


_variants: dict = {}


def sim_class(cls: type) -> type:
    """The class a device tensor of user class `cls` has on the simulated device."""
    if cls is torch.Tensor or issubclass(cls, _SimBase):
        return SimulatedCudaTensor if not issubclass(cls, SimulatedCudaTensor) else cls
    variant = _variants.get(cls)
    if variant is None:
        namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__, "_user_class": cls}
        try:
            variant = type(cls)(cls.__name__, (cls, _Variant), namespace)
        except TypeError as exc:  # e.g. a metaclass or layout torch's wrapper class cannot share
            from syncscope.runtime.sim.dispatch import SimulatedDeviceError

            raise SimulatedDeviceError(
                f"syncscope simulated CUDA device: cannot make a device tensor of class {cls.__qualname__} "
                f"({exc}). Ways out: run this program on a GPU (`syncscope run --device cuda`), or keep "
                f"this subclass on the host in the simulated run."
            ) from exc
        _variants[cls] = variant
    return variant


def convert(result, user_class: type):
    """torch's `_convert`: results back as the subclass (device ones as its variant)."""
    if isinstance(result, torch.Tensor):
        if isinstance(result, _SimBase):
            return result if isinstance(result, _Variant) else as_subclass(result, user_class)
        return result if isinstance(result, user_class) else _original_as_subclass[0](result, user_class)
    if type(result) in (tuple, list):
        return type(result)(convert(r, user_class) for r in result)
    return result


_original_as_subclass: list = [torch.Tensor.as_subclass]


def as_subclass(self, cls):
    if isinstance(self, SimulatedCudaTensor) and isinstance(cls, type) and issubclass(cls, torch.Tensor):
        return _wrapper_around(sim_class(cls), self._elem, self.device, self._elem.requires_grad)
    return _original_as_subclass[0](self, cls)


as_subclass.__doc__ = torch.Tensor.as_subclass.__doc__


_handle: list = [None]  # mode.handle, the simulated device's torch-function handler


def install(patches, handle) -> None:
    _handle[0] = handle
    _original_as_subclass[0] = torch.Tensor.as_subclass
    patches.set(torch.Tensor, "as_subclass", as_subclass)


# -- the torch-function mode: user subclasses first ------------------------------------------------
_own_torch_function: dict = {}


class _Local(threading.local):
    pushed_again = 0  # calls of `their_torch_function` in progress on this thread


_local = _Local()


def goes_first(types) -> bool:
    """Does a user subclass with torch-function behaviour of its own take part in this call, with
    subclass handling on? Then its `__torch_function__` runs before the simulated device."""
    for t in types:
        own = _own_torch_function.get(t)
        if own is None:
            own = _own_torch_function[t] = _has_own_torch_function(t)
        if own:
            return _tf_enabled()
    return False


def _has_own_torch_function(t: type) -> bool:
    if issubclass(t, _Variant):
        return True
    if issubclass(t, (_SimBase, _Lazy)):
        return False
    return getattr(t, "__torch_function__", _DISABLED_TF) is not _DISABLED_TF


def their_torch_function(mode, func, types, args, kwargs):
    """What torch does for these types without a mode: each one's `__torch_function__` in turn
    until one answers; with our mode pushed again underneath."""
    kwargs = kwargs or {}
    _local.pushed_again += 1
    try:
        with mode:
            for t in types:
                result = t.__torch_function__(func, types, args, kwargs)
                if result is not NotImplemented:
                    return result
    finally:
        _local.pushed_again -= 1
    raise TypeError(f"no implementation found for '{state.api_name(func)}' on types that implement __torch_function__: {list(types)}")


_NOWRAP = torch.overrides.get_default_nowrap_functions()  # results torch hands back unconverted


# -- wrapper subclasses: their own __torch_dispatch__ moves them ---------------------------------------
_own_dispatch: dict = {}


def has_own_dispatch(t) -> bool:
    """Is `t` (a tensor or a type) a user wrapper subclass with its own `__torch_dispatch__`?"""
    cls = t if isinstance(t, type) else type(t)
    own = _own_dispatch.get(cls)
    if own is None:
        own = _own_dispatch[cls] = not issubclass(cls, _SimBase) and getattr(cls, "__torch_dispatch__", _DISABLED_TD) is not _DISABLED_TD
    return own


def wrapper_in(types) -> bool:
    for t in types:
        if has_own_dispatch(t):
            return True
    return False


def guard_moves(special: dict, call) -> None:
    """Put the wrapper-subclass case in front of the simulated device's `Tensor.to` /
    `Tensor.cuda` handlers: the aten copy goes to the subclass's `__torch_dispatch__`, whose copy
    of its inner tensor reaches the simulated device. (torch's Python binding of `to` / `cuda`
    takes a CUDA DeviceGuard first, which a CPU-only build lacks: the aten op is called here.)"""
    for func in (torch.Tensor.to, torch.Tensor.cuda):
        inner = special[func]
        if getattr(inner, "wrapper_guarded", False):
            continue

        def handler(f, args, kwargs, inner=inner):
            self = args[0]
            if isinstance(self, _SimBase) or not has_own_dispatch(self):
                return inner(f, args, kwargs)
            if f is torch.Tensor.cuda:
                non_blocking = bool(kwargs.get("non_blocking", args[2] if len(args) > 2 else False))
                dtype, memory_format = None, kwargs.get("memory_format")
            else:
                device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*args[1:], **kwargs)
                if device is None or device.type != "cuda":
                    return call(f, args, kwargs)
            local = state.local
            previous = local.api, local.api_args
            local.api, local.api_args = f, args  # the sync is named after the Python call
            try:
                with _DisableSubclass():
                    return _to_copy(self, dtype=dtype, device=state.DEVICE, non_blocking=non_blocking, memory_format=memory_format)
            finally:
                local.api, local.api_args = previous

        handler.wrapper_guarded = True
        special[func] = handler


_to_copy = torch.ops.aten._to_copy.default
