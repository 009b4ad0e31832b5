"""The body of `__torch_dispatch__` for the simulated device: one aten op at a time.

1. Ask the sync model whether this op, with these arguments, makes a GPU's host wait; if so,
   report it (before running it, so under the `error` policy nothing has happened yet).
2. Run the very same op on the CPU tensors the wrappers hold (so results are CPU eager's,
   bit for bit), with `device="cuda"` arguments turned into `cpu`.
3. Wrap tensor results that live on the device; return host results (a `.cpu()`, an `.item()`)
   as they are; return the caller's own wrapper for in-place and `out=` ops.

This is the hot path (every op on a simulated tensor comes through here), so it avoids pytree
and allocations where it can; the per-op cost is measured by bench/sim_overhead.py.
"""

from __future__ import annotations

import torch

from syncscope.runtime.sim import autograd, devices, graphs, race, state, sync_model
from syncscope.runtime.sim import tensor as _tensor_module
from syncscope.runtime.sim.no_device import needs_a_real_device
from syncscope.runtime.sim.tensor import HostGuardView, SimulatedCudaTensor, _SimBase, is_pinned, mark_pinned, wrap_as

aten = torch.ops.aten
_SIM_TYPES = (SimulatedCudaTensor, HostGuardView)
_CPU = torch.device("cpu")
_MISSING = object()
_rules: dict = {}  # op -> rule or None, filled on first use
# Not dispatcher ops (no rule to look up): what torch asks the strideless wrappers of tensor.py.
_rules.update(dict.fromkeys((torch.ops.prim.layout.default, aten.sym_stride.default, aten.sym_size.default, aten.stride.default)))
_capturing = graphs.capturing

# Ops that may mix device tensors with host tensors of any size on a real GPU.
_MIXED_DEVICE_OK = {
    aten.index.Tensor,
    aten.index.Tensor_out,
    aten.index_put_.default,
    aten.index_put.default,
    aten._index_put_impl_.default,
    aten.copy_.default,
    aten._to_copy.default,
    aten.masked_fill_.Tensor,
    aten.masked_fill.Tensor,
    aten.masked_fill_.Scalar,
    aten.masked_fill.Scalar,
    aten.set_.source_Tensor,
    aten.lift_fresh.default,
}
# Ops whose device tensors may sit on different simulated GPUs (a device-to-device copy).
_CROSS_DEVICE_OK = {aten.copy_.default, aten._to_copy.default}
# Host-side bookkeeping ops with no data and no CPU meaning: a no-op on the simulated device.
_NOOPS = {aten.record_stream.default} if hasattr(aten, "record_stream") else set()


class SimulatedDeviceError(RuntimeError):
    """An op the simulated CUDA device cannot run (it has no CPU kernel)."""


def _unsupported(func, exc: BaseException) -> SimulatedDeviceError:
    name = getattr(func, "_schema", None)
    name = f"{name.name}.{name.overload_name}".rstrip(".") if name is not None else str(func)
    return SimulatedDeviceError(
        f"syncscope simulated CUDA device: cannot run {name}: it has no CPU kernel, so it only "
        f"exists on a real GPU. Ways out: run this program on a GPU (`syncscope run --device cuda`), "
        f"give the op a CPU implementation for testing (`torch.library.impl(\"{name.split('.')[0]}\", "
        f"\"cpu\")`), or keep this call out of the simulated run. (torch said: {str(exc).split('. This could be')[0].splitlines()[0]})"
    )


def _unwrap_seq(seq, found):
    out = []
    for item in seq:
        if isinstance(item, _SimBase):
            found[0] = True
            item = item._elem
        elif type(item) in (list, tuple):
            item = _unwrap_seq(item, found)
        elif found[1] is None and isinstance(item, torch.Tensor) and item.dim() > 0:
            found[1] = item
        out.append(item)
    return type(seq)(out) if type(seq) is tuple else out


def _first_sight(func):
    """The rule for an op seen for the first time (cached by the caller). Under
    `torch.inference_mode()` autograd's keys are skipped, so ops that are compositions of others
    (`aten::to.device`, `reshape`, `contiguous`) reach us whole instead of decomposed; run their
    decomposition, exactly what `no_grad` would have run, so both modes see the same aten ops."""
    if func not in _RUN_WHOLE and torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CompositeImplicitAutograd"):
        return _DECOMPOSE
    return sync_model.rule_for(func)


# Composites that are hot in inference code and have no sync and no device argument in any of
# their pieces: run whole on the CPU tensors (the CPU runs the very same decomposition, so the
# numbers are the same), saving a Python round trip per piece (bench/sim_overhead.py: matmul,
# reshape and softmax alone doubled the per-op cost when decomposed).
_RUN_WHOLE = {
    aten.matmul.default,
    aten.reshape.default,
    aten.softmax.int,
    aten.log_softmax.int,
    aten.linear.default,
    aten.contiguous.default,
    aten.flatten.using_ints,
    aten.unflatten.int,
    aten.layer_norm.default,
    aten.group_norm.default,
    aten.einsum.default,
    aten.type_as.default,
    aten.expand_as.default,
    aten.view_as.default,
    aten.chunk.default,
    aten.dropout.default,
    aten.rms_norm.default,
}


_DECOMPOSE = object()
dispatch_mode = None  # mode.py sets it: a factory of the simulated device's dispatch mode
# View ops: under inference mode a view of a normal tensor must be a normal tensor (torch sets
# its version counter to the base's), so its wrapper is made outside inference mode.
_view_ops: dict = {}
_inference_mode_enabled = torch.is_inference_mode_enabled
_grad_enabled = torch.is_grad_enabled
_OutsideInferenceMode = torch._C._InferenceMode


_allocates_alone: set = set()  # composite ops whose pieces allocate on the device by themselves
# A CUDA build of torch has CUDA kernels: there such a piece does not fail, it allocates on the
# real GPU (a real cuda scalar among simulated tensors, which the CPU kernels then refuse), or
# fails with the driver's error on a machine without one. So a CUDA build catches every piece.
_REAL_CUDA_KERNELS = torch.backends.cuda.is_built()


def _decompose(func, args, kwargs):
    """Run a composite op as its pieces. Some pieces allocate on the device with no device tensor
    among their arguments (`where(c, x, 0.)` makes a cuda scalar); our dispatch mode, popped
    while it handles this op, must then see them: pushed again for those ops only (a push costs
    more than most ops), found by their first failure (CUDA's allocator, before any write) on a
    CPU-only build, pushed for every composite on a CUDA build."""
    if func not in _allocates_alone and not _REAL_CUDA_KERNELS:
        try:
            return func.decompose(*args, **kwargs)
        except (NotImplementedError, RuntimeError) as exc:
            if not needs_a_real_device(exc):
                raise
        _allocates_alone.add(func)
    with dispatch_mode():
        return func.decompose(*args, **kwargs)


def dispatch(cls, func, args, kwargs):
    rule = _rules.get(func, _MISSING)
    if rule is _MISSING:
        rule = _rules[func] = _first_sight(func)
    if rule is _DECOMPOSE:
        out = _decompose(func, args, kwargs)
        if out is not NotImplemented:
            return out
        rule = _rules[func] = sync_model.rule_for(func)
    # Several simulated GPUs in use: the op's tensors must share one (its results' device).
    dev = devices.common(func, args, kwargs, _CROSS_DEVICE_OK) if devices.several[0] else None
    if rule is not None:
        kind = rule(args, kwargs)
        if kind is not None:
            local = state.local
            kind = sync_model.refine(kind, local.api, local.api_args)
            api = state.current_api() or f"aten.{func._schema.name.split('::')[-1]}"
            state.sync(kind, api)
    if func in _NOOPS:
        return None

    # -- unwrap ---------------------------------------------------------------------------------
    found = [False, None]  # (saw a device tensor, first host tensor with dim > 0)
    uargs = _unwrap_seq(args, found)
    out_device = None  # None: same as the device tensors (cuda)
    pinned_out = False
    if kwargs:
        ukwargs = {}
        for key, value in kwargs.items():
            if isinstance(value, _SimBase):
                value = value._elem
            elif key == "device" and value is not None:
                out_device = value
                value = _CPU
            elif key == "pin_memory" and value:
                pinned_out = True
                value = False
            elif type(value) in (list, tuple):
                value = _unwrap_seq(value, found)
            ukwargs[key] = value
    else:
        ukwargs = kwargs
    if found[1] is not None and func not in _MIXED_DEVICE_OK:
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{state.DEVICE} and cpu! (syncscope simulated device, in {func})"
        )

    # -- run on the CPU ---------------------------------------------------------------------------
    try:
        if _grad_enabled() and autograd.records(uargs, ukwargs):
            out = autograd.run_recording(func, uargs, ukwargs, args)  # the graph, on the CPU tensors
        else:
            out = func(*uargs, **ukwargs)
    except NotImplementedError as exc:
        raise _unsupported(func, exc) from exc
    except RuntimeError as exc:
        if "Could not run" in str(exc) and "CPU" in str(exc):
            raise _unsupported(func, exc) from exc
        if "half to float conversion is not supported on CPU" not in str(exc):
            raise
        # softmax/log_softmax of a half tensor into float32 (what CUDA autocast asks for):
        # CUDA's composite takes a fused half->float kernel that the CPU lacks; same values.
        uargs = (uargs[0].float(), uargs[1], False)
        out = func(*uargs)
    if _capturing[0]:
        graphs.record(func, uargs, ukwargs, out)

    # -- wrap -------------------------------------------------------------------------------------
    if out_device is not None and torch.device(out_device).type != "cuda":
        if func is aten._to_copy.default and kwargs.get("non_blocking") and isinstance(args[0], _SimBase):
            pinned_out = True  # torch allocates a non_blocking device->host copy in pinned memory
            race.note_async_d2h(out)
        if pinned_out and isinstance(out, torch.Tensor):
            mark_pinned(out)
        return out  # a host result (`new_empty(..., device="cpu")`)
    if out_device is not None:
        dev = devices.resolve(out_device)  # `device="cuda:1"`: a factory, a device->device copy
    if func is aten._to_copy.default and out_device is None and isinstance(args[0], _SimBase):
        pass  # a device->device copy (dtype change)
    elif func is aten.copy_.default:
        dst = args[0]
        non_blocking = kwargs.get("non_blocking", len(args) > 2 and args[2])
        if non_blocking and isinstance(args[1], _SimBase) and not isinstance(dst, _SimBase) and is_pinned(dst):
            race.note_async_d2h(dst)
        return dst
    elif func is aten._local_scalar_dense.default:
        return out
    is_view = _view_ops.get(func)
    if is_view is None:
        is_view = _view_ops[func] = bool(getattr(func, "is_view", False))
    if is_view and _inference_mode_enabled() and _has_normal_tensor(args):
        with _OutsideInferenceMode(False):  # the C++ guard: a third of torch.inference_mode's cost
            return _wrap_out(cls, out, uargs, args, ukwargs, kwargs, dev)
    return _wrap_out(cls, out, uargs, args, ukwargs, kwargs, dev)


def _has_normal_tensor(args) -> bool:
    """Does a view op's base (its first tensor argument) live outside inference mode?"""
    for arg in args:
        if isinstance(arg, torch.Tensor):
            return not arg.is_inference()
    return False


def _wrap_out(cls, out, uargs, args, ukwargs, kwargs, dev=None):
    if isinstance(out, torch.Tensor):
        if uargs and out is uargs[0]:
            return args[0]  # in-place: the caller's own wrapper
        if ukwargs and "out" in ukwargs and out is ukwargs["out"]:
            return kwargs["out"]
        return wrap_as(cls, out, dev)
    if type(out) in (tuple, list):
        return type(out)(_wrap_out(cls, o, uargs, args, ukwargs, kwargs, dev) for o in out)
    return out


def tensor_repr(t) -> str:
    """Printing a CUDA tensor reads its values on the host: a sync on a GPU, recorded here too."""
    from syncscope.events import SyncKind as K

    state.sync(K.CPU_COPY, "Tensor.__repr__")
    from syncscope.runtime import regions

    with regions.suspend():
        text = repr(t._elem)
    if not text.startswith("tensor(") or not text.endswith(")"):
        return text
    inner = text[len("tensor(") : -1]
    end = inner.rfind("]") + 1 if inner.startswith("[") else (inner.find(", ") % (len(inner) + 1))
    if t._elem.layout is not torch.strided and "size=(" in inner:  # sparse: the device is the first suffix
        end = inner.rfind("size=(")
        return f"tensor({inner[:end]}device='{t.device}', {inner[end:]})"
    return f"tensor({inner[:end]}, device='{t.device}'{inner[end:]})"


_tensor_module._dispatch = dispatch
_tensor_module._repr = tensor_repr
