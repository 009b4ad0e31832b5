"""Lazy modules (`nn.LazyLinear` and friends) on the simulated device.

A lazy module's placeholder (`UninitializedParameter`) holds no data to move: on a GPU,
`.cuda()` / `.to("cuda")` leave it uninitialized on the device, and its first call creates the
data there. Moved for real onto the simulated device it would become an ordinary parameter of
shape (0,) and break `LazyLinear.initialize_parameters`; so it stays uninitialized and remembers
where its data will live, and `materialize` (patched while the device is installed) creates it
there.
"""

from __future__ import annotations

import torch

from syncscope.runtime.sim import state

Uninitialized = torch.nn.parameter.UninitializedTensorMixin
DEVICE_ATTR = "_syncscope_sim_device"


def lazy_to(self, func, args, kwargs, call):
    """`Tensor.cuda` / `Tensor.to` of a placeholder: remember the device (or forget it for a
    move elsewhere, done by `call`)."""
    if func is torch.Tensor.cuda:
        self.__dict__[DEVICE_ATTR] = state.DEVICE
        return self
    device = torch._C._nn._parse_to(*args[1:], **kwargs)[0]
    if device is not None and device.type == "cuda":
        self.__dict__[DEVICE_ATTR] = state.DEVICE
        return self
    self.__dict__.pop(DEVICE_ATTR, None)
    return call(func, args, kwargs)


def patch_materialize(patches) -> None:
    """Create a placeholder moved to the simulated device there, keeping the very object the
    module holds (`swap_tensors`)."""
    original = Uninitialized.materialize

    def materialize(self, shape, device=None, dtype=None):
        target = self.__dict__.get(DEVICE_ATTR)
        if target is None or device is not None:
            return original(self, shape, device=device, dtype=dtype)
        made = torch.empty(shape, device=target, dtype=dtype or self.data.dtype)
        if self.cls_to_become is torch.nn.Parameter:
            made = torch.nn.Parameter(made, requires_grad=self.requires_grad)
        del self.__dict__[DEVICE_ATTR]
        torch.utils.swap_tensors(self, made)

    materialize.__doc__ = original.__doc__
    patches.set(Uninitialized, "materialize", materialize)


def guard_moves(special: dict, call) -> None:
    """Put `lazy_to` in front of the simulated device's `Tensor.to` / `Tensor.cuda` handlers
    (mode.py's table of special calls). Idempotent."""
    for func in (torch.Tensor.to, torch.Tensor.cuda):
        inner = special[func]
        if getattr(inner, "lazy_guarded", False):
            continue

        def handler(f, args, kwargs, inner=inner):
            if isinstance(args[0], Uninitialized):
                return lazy_to(args[0], f, args, kwargs, call)
            return inner(f, args, kwargs)

        handler.lazy_guarded = True
        special[func] = handler
