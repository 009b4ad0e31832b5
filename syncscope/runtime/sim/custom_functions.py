"""Custom `torch.autograd.Function`s on simulated tensors.

The graph of the simulated device lives on the CPU tensors its wrappers hold (autograd.py), but
`Function.apply` records its node on the tensors it is given: handed wrappers (which never require
grad themselves) it would record nothing, and the gradient would silently stop there. So while the
simulated device is installed, `apply` with a simulated tensor whose held tensor requires grad goes
through `_Bridge`, a Function over the held tensors whose forward and backward call the user's,
on simulated tensors again (so their ops still meet the sync model, and a sync in a custom
backward is reported at its line, as the GPU detector reports it from autograd's thread). The
user's `ctx` is a `FunctionContext` with what custom Functions use: `save_for_backward` /
`saved_tensors`, `needs_input_grad`, `mark_dirty`, `mark_non_differentiable`,
`set_materialize_grads`, and any attribute the Function sets on it.
"""

from __future__ import annotations

import torch

from syncscope.runtime.sim.tensor import _SimBase, wrap

_Function = torch.autograd.Function
_DisableSubclass = torch._C.DisableTorchFunctionSubclass


def _device(t):
    with _DisableSubclass():
        return t.device


class FunctionContext:
    """The `ctx` a bridged custom Function sees."""

    def __init__(self, needs_input_grad: tuple) -> None:
        self.needs_input_grad = needs_input_grad
        self._saved: tuple = ()
        self._dirty: tuple = ()
        self._non_differentiable: tuple = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors) -> None:
        self._saved = tensors

    def save_for_forward(self, *tensors) -> None:
        self._saved_for_forward = tensors

    @property
    def saved_tensors(self) -> tuple:
        return self._saved

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = value


def _held(value):
    return value._elem if isinstance(value, _SimBase) else value


class _Bridge(_Function):
    @staticmethod
    def forward(ctx, user_cls, user_ctx, devices, *held_args):
        args = tuple(wrap(h, d) if d is not None else h for h, d in zip(held_args, devices))
        if _setup_context_defined(user_cls):
            out = user_cls.forward(*args)
            user_cls.setup_context(user_ctx, args, out)
        else:
            out = user_cls.forward(user_ctx, *args)
        single = not isinstance(out, tuple)
        outs = (out,) if single else out
        out_devices = tuple(_device(o) if isinstance(o, _SimBase) else None for o in outs)
        user_ctx._out_devices = out_devices  # apply() wraps the held outputs on these devices
        ctx.user = (user_cls, user_ctx, devices, single, out_devices)
        ctx.set_materialize_grads(user_ctx.materialize_grads)
        dirty = {id(t) for t in user_ctx._dirty}
        if dirty:
            ctx.mark_dirty(*(held_args[i] for i, a in enumerate(args) if id(a) in dirty))
        held_outs = []
        for o in outs:
            # an input handed back unchanged is the held input itself (autograd needs to see that)
            source = next((held_args[i] for i, a in enumerate(args) if a is o), None)
            held_outs.append(source if source is not None else _held(o))
        frozen = {id(t) for t in user_ctx._non_differentiable}
        if frozen:
            ctx.mark_non_differentiable(*(h for h, o in zip(held_outs, outs) if id(o) in frozen))
        return held_outs[0] if single else tuple(held_outs)

    @staticmethod
    def backward(ctx, *grads):
        user_cls, user_ctx, devices, single, out_devices = ctx.user
        wrapped = tuple(wrap(g, d) if g is not None and d is not None else g for g, d in zip(grads, out_devices))
        result = user_cls.backward(user_ctx, *wrapped)
        result = result if isinstance(result, tuple) else (result,)
        return (None, None, None, *(_held(r) for r in result))


def _setup_context_defined(cls) -> bool:
    from torch.autograd.function import _is_setup_context_defined

    return _is_setup_context_defined(cls.setup_context)


def _needs_bridge(args) -> bool:
    if not torch.is_grad_enabled():
        return False
    return any(isinstance(a, _SimBase) and a._elem.requires_grad for a in args)


def install(patches) -> None:
    original = _Function.__dict__["apply"]  # the classmethod
    original_apply = original.__func__

    def apply(cls, *args, **kwargs):
        if cls is _Bridge or kwargs or not _needs_bridge(args):
            return original_apply(cls, *args, **kwargs)
        needs = tuple(isinstance(a, torch.Tensor) and _held(a).requires_grad for a in args)
        devices = tuple(_device(a) if isinstance(a, _SimBase) else None for a in args)
        user_ctx = FunctionContext(needs)
        out = original_apply(_Bridge, cls, user_ctx, devices, *(_held(a) for a in args))
        out_devices = user_ctx._out_devices
        if isinstance(out, tuple):
            return tuple(wrap(o, d) if d is not None else o for o, d in zip(out, out_devices))
        return wrap(out, out_devices[0]) if out_devices[0] is not None else out

    patches.set(_Function, "apply", classmethod(apply))
