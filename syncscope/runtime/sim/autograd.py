"""Autograd on the simulated device: the graph lives on the CPU tensors the wrappers hold.

Why not on the wrappers: torch's C++ autograd engine gives every tensor that says `cuda` a CUDA
stream (`InputBuffer::add` asks `at::accelerator::getCurrentStream`, `Node::stream()` asks
`at::getAccelerator()`), and on a CPU-only build both are answered from CUDA hooks that say "no
CUDA", before and independently of any device guard: a backward through a `cuda` tensor fails
("Cannot access accelerator device when none is available") or aborts. So:

* a wrapper never requires grad itself (C++ never records a node for it); its held CPU tensor,
  `_elem`, does. Ops on simulated tensors still reach dispatch.py as device ops (the sync model
  sees them), and dispatch.py runs the CPU op with autograd's keys let through again
  (`run_recording`), so the CPU op records its backward node on the held tensors: the graph is
  exactly the one plain CPU would build, and the gradients are CPU's, bit for bit;
* the Python-level autograd surface of a wrapper (`requires_grad`, `.grad`, `grad_fn`,
  `is_leaf`, `backward()`, `register_hook`, `detach`, `.data`, `torch.autograd.grad/backward`)
  is answered from the held tensor (`HANDLERS`, installed into mode.py's torch-function table);
* the backward pass runs on the CPU tensors under `BackwardSyncModel`, a dispatch mode that asks
  the sync model about each backward op as if its tensors were on the device (a tensor the
  program passed in from the host stays a host tensor), so a sync a GPU would have in backward
  (the `nonzero` of a boolean-mask index's backward) is reported. On a GPU such a sync happens on
  autograd's device thread and torch's sync-debug warning carries no op name; torch replays it
  in the calling thread when backward returns, where the GPU detector records it as `other` at
  the line that called backward. The simulated device reports the same (path, line, kind) and
  names the op in the event's `api`.
"""

from __future__ import annotations

import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from syncscope.events import SyncKind as K
from syncscope.runtime.sim import state, sync_model
from syncscope.runtime.sim.tensor import _SimBase, wrap, wrap_view

T = torch.Tensor
_DK = torch._C.DispatchKey
_LetAutogradThrough = torch._C._SetExcludeDispatchKeyGuard
_DisableSubclass = torch._C.DisableTorchFunctionSubclass

# Host tensors an op on device tensors took while recording (an index, a mask): the backward
# pass sees them again, still on the host.
host_tensors: "weakref.WeakSet[torch.Tensor]" = weakref.WeakSet()


# -- forward: record the graph on the held CPU tensors ------------------------------------------------
def records(uargs, ukwargs) -> bool:
    """Does this op (grad mode on) take a held tensor that requires grad?"""
    return _any_requires_grad(uargs) or (bool(ukwargs) and _any_requires_grad(ukwargs.values()))


def _any_requires_grad(values) -> bool:
    for arg in values:
        if isinstance(arg, torch.Tensor):
            if arg.requires_grad:
                return True
        elif type(arg) in (list, tuple):
            for item in arg:
                if isinstance(item, torch.Tensor) and item.requires_grad:
                    return True
    return False


def run_recording(func, uargs, ukwargs, args):
    """Run the CPU op with autograd's keys no longer excluded (dispatch of a wrapper subclass runs
    below autograd), so it records its backward node on the CPU tensors."""
    for arg, held in zip(args, uargs):
        if isinstance(held, torch.Tensor) and not isinstance(arg, _SimBase):
            host_tensors.add(held)
        elif type(held) in (list, tuple):
            for item, original in zip(held, arg):
                if isinstance(item, torch.Tensor) and not isinstance(original, _SimBase):
                    host_tensors.add(item)
    with _LetAutogradThrough(_DK.AutogradFunctionality, False), _LetAutogradThrough(_DK.ADInplaceOrView, False):
        return func(*uargs, **ukwargs)


# -- the Python-level autograd surface of a wrapper ----------------------------------------------------
def _device(t) -> torch.device:
    with _DisableSubclass():
        return t.device


def _held(value):
    if isinstance(value, _SimBase):
        return value._elem
    if type(value) in (list, tuple):
        return type(value)(_held(v) for v in value)
    return value


def _get_grad(func, args, kwargs):
    self = args[0]
    grad = self._elem.grad
    if grad is None:
        return None
    cached = self.__dict__.get("_sim_grad")
    if cached is not None and cached._elem is grad:
        return cached  # `p.grad is p.grad`, as for a real tensor
    out = self.__dict__["_sim_grad"] = wrap(grad, _device(self))
    return out


def _set_grad(func, args, kwargs):
    self, value = args[0], args[1]
    if value is not None and not isinstance(value, _SimBase):
        raise RuntimeError(
            "attempting to assign a gradient with device type 'cpu' to a tensor with device type "
            "'cuda'. Please ensure that the gradient and the tensor are on the same device"
        )
    self.__dict__.pop("_sim_grad", None)  # (`p.grad = None` must free the old gradient)
    self._elem.grad = _held(value)


def _del_grad(func, args, kwargs):
    args[0].__dict__.pop("_sim_grad", None)
    args[0]._elem.grad = None


def _set_requires_grad(func, args, kwargs):
    args[0]._elem.requires_grad = args[1]


def _requires_grad_(func, args, kwargs):
    flag = kwargs.get("requires_grad", args[1] if len(args) > 1 else True)
    args[0]._elem.requires_grad_(flag)
    return args[0]


def _detach(func, args, kwargs):
    return wrap(args[0]._elem.detach(), _device(args[0]))


def _detach_(func, args, kwargs):
    args[0]._elem.detach_()
    return args[0]


def _get_data(func, args, kwargs):
    return wrap(args[0]._elem.data, _device(args[0]))


def _set_data(func, args, kwargs):
    self, value = args
    if not isinstance(value, _SimBase):
        raise RuntimeError("data set to a tensor that requires gradients must be a simulated CUDA tensor")
    self._elem.data = value._elem


def _register_hook(func, args, kwargs):
    self, hook = args[0], args[1] if len(args) > 1 else kwargs["hook"]
    device = _device(self)

    def on_held(grad):
        out = hook(wrap(grad, device))
        return None if out is None else _held(out)

    return self._elem.register_hook(on_held)


def _register_post_accumulate_grad_hook(func, args, kwargs):
    self, hook = args[0], args[1] if len(args) > 1 else kwargs["hook"]
    return self._elem.register_post_accumulate_grad_hook(lambda _held_tensor: hook(self))


def _attribute(name):
    return lambda func, args, kwargs: getattr(args[0]._elem, name)


def _method(name):
    return lambda func, args, kwargs: getattr(args[0]._elem, name)(*args[1:], **kwargs)


# -- backward ------------------------------------------------------------------------------------------
def _tensor_backward(func, args, kwargs):
    self = args[0]
    names = ("gradient", "retain_graph", "create_graph", "inputs")
    options = dict(zip(names, args[1:]))
    options.update(kwargs)
    with BackwardSyncModel():
        torch.autograd.backward(
            self._elem,
            grad_tensors=_held(options.get("gradient")),
            retain_graph=options.get("retain_graph"),
            create_graph=options.get("create_graph", False),
            inputs=_held(options.get("inputs")),
        )


def _autograd_backward(func, args, kwargs):
    args = _held(tuple(args))
    kwargs = {k: _held(v) for k, v in kwargs.items()}
    with _DisableSubclass(), BackwardSyncModel():
        return func(*args, **kwargs)


def _autograd_grad(func, args, kwargs):
    names = ("outputs", "inputs", "grad_outputs")
    options = dict(zip(names, args))
    options.update(kwargs)
    inputs = options["inputs"]
    like = inputs if isinstance(inputs, torch.Tensor) else (inputs[0] if inputs else None)
    options = {k: _held(v) for k, v in options.items()}
    with _DisableSubclass(), BackwardSyncModel():
        grads = func(**options)
    device = _device(like) if isinstance(like, _SimBase) else state.DEVICE
    return tuple(wrap(g, device) if isinstance(g, torch.Tensor) and not isinstance(g, _SimBase) else g for g in grads)


class BackwardSyncModel(TorchDispatchMode):
    """The backward pass, op by op, on the CPU tensors: the sync model is asked as if they were on
    the device (every tensor but the host ones the forward pass took), then the op runs."""

    _rules: dict = {}

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        rule = self._rules.get(func, _MISSING)
        if rule is _MISSING:
            rule = self._rules[func] = sync_model.rule_for(func)
        if rule is not None and not _mentions_sim(args):  # (a custom backward's own ops: dispatch.py)
            kind = rule(_as_device(args), _device_kwargs(kwargs))
            if kind is not None:
                # As the GPU detector sees it: torch's warning with no op name, replayed at the
                # line that called backward.
                state.sync(K.OTHER, f"autograd backward: aten.{func._schema.name.split('::')[-1]} ({kind})")
        return func(*args, **kwargs)


_MISSING = object()
_CPU = torch.device("cpu")


def _mentions_sim(args) -> bool:
    for arg in args:
        if isinstance(arg, _SimBase):
            return True
        if type(arg) in (list, tuple) and any(isinstance(item, _SimBase) for item in arg):
            return True
    return False


def _device_kwargs(kwargs: dict) -> dict:
    # The backward of a cast (`ToCopyBackward`: `grad.to(self.options())`) names the held
    # tensor's device, the CPU; on a GPU it is the device itself: no device->host copy.
    out = _as_device(kwargs)
    if out.get("device") == _CPU:
        out["device"] = state.DEVICE
    return out


def _as_device(value):
    if isinstance(value, torch.Tensor) and not isinstance(value, _SimBase):
        return value if value in host_tensors else wrap_view(value)
    if type(value) in (list, tuple):
        return type(value)(_as_device(v) for v in value)
    if type(value) is dict:
        return {k: _as_device(v) for k, v in value.items()}
    return value


HANDLERS = {
    T.requires_grad.__get__: _attribute("requires_grad"),
    T.requires_grad.__set__: _set_requires_grad,
    T.grad.__get__: _get_grad,
    T.grad.__set__: _set_grad,
    T.grad.__delete__: _del_grad,
    T.grad_fn.__get__: _attribute("grad_fn"),
    T.is_leaf.__get__: _attribute("is_leaf"),
    T.retains_grad.__get__: _attribute("retains_grad"),
    T._version.__get__: _attribute("_version"),
    T.data.__get__: _get_data,
    T.data.__set__: _set_data,
    T.requires_grad_: _requires_grad_,
    T.retain_grad: _method("retain_grad"),
    T.detach: _detach,
    T.detach_: _detach_,
    T.register_hook: _register_hook,
    T.register_post_accumulate_grad_hook: _register_post_accumulate_grad_hook,
    T.backward: _tensor_backward,
    torch.autograd.backward: _autograd_backward,
    torch.autograd.grad: _autograd_grad,
}


def handlers(has_sim):
    """The table for mode.py: each entry only for calls that involve a simulated tensor."""

    def guarded(handler):
        def call(func, args, kwargs, _handler=handler):
            if has_sim(args) or (kwargs and has_sim(tuple(kwargs.values()))):
                return _handler(func, args, kwargs)
            with _DisableSubclass():
                return func(*args, **kwargs)

        return call

    return {func: guarded(handler) for func, handler in HANDLERS.items()}


# -- optimizers and clip_grad_norm_ take their GPU paths -------------------------------------------------
def install(patches) -> None:
    """torch picks foreach kernels for CUDA tensors of the exact types in these lists (and refuses
    `foreach=True` for others): let the simulated tensor take the path a GPU takes."""
    from syncscope.runtime.sim.tensor import SimulatedCudaTensor
    import torch.optim.optimizer as optimizer
    import torch.utils._foreach_utils as foreach_utils

    for module in (optimizer, foreach_utils):
        types = getattr(module, "_foreach_supported_types", None)
        if isinstance(types, list) and SimulatedCudaTensor not in types:
            patches.set(module, "_foreach_supported_types", [*types, SimulatedCudaTensor])
