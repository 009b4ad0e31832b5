"""Which aten op, with which arguments, makes a GPU's host wait: the simulated device's sync model.

Two sources, no guessing:

* Op tags. `torch.Tag.data_dependent_output` (a host value computed from device data:
  `_local_scalar_dense`, `equal`, `allclose`) and `torch.Tag.dynamic_output_shape` (the output's
  size depends on device data: `nonzero`, `masked_select`, `_unique2`, `bincount`, `index.Tensor`,
  `repeat_interleave.Tensor`, ...): the host must learn a value or a size, so it waits.
* Argument rules (anchors.md sections 1-2), because a tag is not a sync: `index.Tensor` blocks
  with a device bool/uint8 mask or a host long index but not with a host bool mask or a device
  long index; `index_put_` with a host mask blocks, with a device mask and a host scalar it is a
  `masked_fill_`; `repeat_interleave.Tensor` is free with `output_size`; `histc` only computes its
  range on the device when `min == max`; copies block by direction, `non_blocking` and pinning.
  And untagged ops that block: `copy_` / `_to_copy` between host and device.

A rule takes the op's arguments as dispatched (device tensors are our wrapper classes, host tensors
plain ones) and returns a `SyncKind` or None. `rule_for(op)` is computed once per op overload.
"""

from __future__ import annotations

import types
from typing import Callable, Optional

import torch

from syncscope.events import SyncKind as K
from syncscope.runtime.sim import state
from syncscope.runtime.sim.tensor import _SimBase, is_pinned

aten = torch.ops.aten
Rule = Callable[[tuple, dict], Optional[str]]
_MASK_DTYPES = (torch.bool, torch.uint8)


def on_device(x) -> bool:
    return isinstance(x, _SimBase)


def _host_tensor(x) -> bool:
    return isinstance(x, torch.Tensor) and not isinstance(x, _SimBase)


def _fixed(kind: str) -> Rule:
    return lambda args, kwargs: kind


def _arg(args, kwargs, position: int, name: str, default=None):
    if len(args) > position:
        return args[position]
    return kwargs.get(name, default)


# -- indexing ----------------------------------------------------------------------------------
def _index(args, kwargs) -> str | None:
    """x[mask] / x[idx]: a device mask needs nonzero on the device (its size goes to the host);
    a host long index is copied to the device with a blocking copy. A host bool mask is turned
    into indices on the host and copied asynchronously: free."""
    host_long = False
    for index in args[1]:
        if index is None:
            continue
        if index.dtype in _MASK_DTYPES:
            if on_device(index):
                return K.BOOL_MASK_INDEX
        elif not on_device(index):
            host_long = True
    return K.HOST_INDEX if host_long else None


def _index_put(args, kwargs) -> str | None:
    self, indices, value = args[0], args[1], args[2]
    accumulate = _arg(args, kwargs, 3, "accumulate", False)
    present = [i for i in indices if i is not None]
    # torch's canDispatchToMaskedFill: one mask on self's device and a one-element host value
    # becomes masked_fill_ (no nonzero, no sync): `x[gpu_mask] = 0.0`.
    if (
        not accumulate
        and len(present) == 1
        and present[0].dtype in _MASK_DTYPES
        and on_device(present[0]) == on_device(self)
        and _host_tensor(value)
        and value.numel() == 1
    ):
        return None
    for index in present:
        if index.dtype in _MASK_DTYPES:
            return K.BOOL_MASK_INDEX if on_device(index) else K.HOST_INDEX
        if not on_device(index):
            return K.HOST_INDEX
    if _host_tensor(value) and value.dim() > 0:
        return K.H2D_COPY
    return None


def _masked_fill(args, kwargs) -> str | None:
    mask = args[1]
    # On CUDA a host mask is only accepted as a 0-dim tensor; a bigger one arrives here only
    # from indexing (`x[cpu_mask] = v`), which blocks.
    if _host_tensor(mask) and mask.dim() > 0 and on_device(args[0]):
        return K.HOST_INDEX
    return None


# -- copies ------------------------------------------------------------------------------------
def _copy(args, kwargs) -> str | None:
    dst, src = args[0], args[1]
    if dst.numel() == 0:
        return None  # ATen's copy_ returns before any transfer when there is nothing to copy
    non_blocking = bool(_arg(args, kwargs, 2, "non_blocking", False))
    dst_dev, src_dev = on_device(dst), on_device(src)
    if dst_dev and _host_tensor(src):
        if not non_blocking:
            return K.H2D_COPY
        # The driver stages a pageable source synchronously even when asked not to block.
        return None if is_pinned(src) else K.H2D_PAGEABLE
    if src_dev and _host_tensor(dst):
        if not non_blocking:
            return K.CPU_COPY
        # cudaMemcpyAsync into pageable host memory returns only once the copy is done.
        return None if is_pinned(dst) else K.CPU_COPY
    return None


def _to_copy(args, kwargs) -> str | None:
    device = kwargs.get("device")
    if device is None or args[0].numel() == 0:
        return None  # no element, no transfer (ATen's copy_ returns early): `torch.tensor([], device="cuda")`
    if device.type == "cuda" and _host_tensor(args[0]):  # host -> device from inside C++
        if not kwargs.get("non_blocking"):
            return K.H2D_COPY
        return None if is_pinned(args[0]) else K.H2D_PAGEABLE
    if device.type != "cpu" or not on_device(args[0]):
        return None
    # A non_blocking device->host copy goes into fresh pinned memory: free, and a race until
    # synchronized (race.py).
    return None if kwargs.get("non_blocking") else K.CPU_COPY


# -- data-dependent sizes with an escape hatch ---------------------------------------------------
def _repeat_interleave(args, kwargs) -> str | None:
    return K.REPEAT_INTERLEAVE if kwargs.get("output_size") is None else None


def _histc(args, kwargs) -> str | None:
    low = _arg(args, kwargs, 2, "min", 0)
    high = _arg(args, kwargs, 3, "max", 0)
    return K.DYNAMIC_SHAPE if low == high else None  # the range is read from the data


_RULES: dict = {
    aten._local_scalar_dense.default: _fixed(K.ITEM),
    aten.nonzero.default: _fixed(K.NONZERO),
    aten.nonzero.out: _fixed(K.NONZERO),
    aten.index.Tensor: _index,
    aten.index.Tensor_out: _index,
    aten.index_put_.default: _index_put,
    aten.index_put.default: _index_put,
    aten._index_put_impl_.default: _index_put,
    aten.masked_fill_.Scalar: _masked_fill,
    aten.masked_fill_.Tensor: _masked_fill,
    aten.masked_fill.Scalar: _masked_fill,
    aten.masked_fill.Tensor: _masked_fill,
    aten.copy_.default: _copy,
    aten._to_copy.default: _to_copy,
    aten.repeat_interleave.Tensor: _repeat_interleave,
    aten.histc.default: _histc,
    aten.histc.out: _histc,
}

# Tagged ops whose kind is more specific than the tag's default.
_TAG_KIND = {
    "aten::nonzero": K.NONZERO,
    "aten::argwhere": K.NONZERO,
    "aten::repeat_interleave": K.REPEAT_INTERLEAVE,
}


def rule_for(op) -> Rule | None:
    """The rule for one op overload: an explicit one, else its tags, else None (never blocks)."""
    rule = _RULES.get(op)
    if rule is not None:
        return rule
    tags = getattr(op, "tags", ())
    if torch.Tag.data_dependent_output in tags:
        return _fixed(K.ITEM)
    if torch.Tag.dynamic_output_shape in tags:
        return _fixed(_TAG_KIND.get(op._schema.name, K.DYNAMIC_SHAPE))
    return None


def refine(kind: str, api_func, api_args: tuple) -> str:
    """Name the sync as the real-GPU detector does from the Python call that caused it."""
    if api_func is None:
        return kind
    name = getattr(api_func, "__name__", "")
    if name == "__setitem__" and kind == K.H2D_COPY and len(api_args) > 2:
        if isinstance(api_args[2], (int, float, bool, complex)):
            return K.SCALAR_STORE  # x_gpu[i] = 5.0: the number is copied from the host, blocking
    elif name == "one_hot" and kind == K.ITEM:
        return K.DYNAMIC_SHAPE  # one_hot without num_classes reads max() to size its output
    elif name in ("tolist",) and kind in (K.ITEM, K.CPU_COPY):
        return K.TOLIST
    if unshimmed_c_call(api_func):
        return K.OTHER
    return kind


# What a torch callable implemented in C is: a function (`torch.full`), a method (`Tensor.view`)
# or a slot (`Tensor.__getitem__`). Between such a call and the sync it raises in C++ no Python
# code runs, so no shim of the real-GPU detector can: there the sync arrives as torch's bare
# sync-debug warning, recorded as `other` (cuda.py, `_showwarning`). A Python function of torch
# (`torch.unique`, `Tensor.__format__`) may reach a shimmed API on the way: its kind is kept.
_C_CALLABLES = (
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.ClassMethodDescriptorType,
)
_shimmed: list = []  # [the API names cuda.py's shims wrap], read on first use


def unshimmed_c_call(api_func) -> bool:
    """Is `api_func` a C-implemented torch callable that the real-GPU detector does not shim?
    (`torch.full`: its `fill_value=cuda_scalar` is read on the host with no shim in between.)"""
    if type(api_func) not in _C_CALLABLES:
        return False
    if not _shimmed:
        # One definition for both devices: the names of cuda.py's shims. Imported on the first
        # sync that needs it (cuda.py is the GPU detector; a sim run need not load it otherwise).
        from syncscope.runtime.cuda import shimmed_api_names

        _shimmed.append(shimmed_api_names())
    return state.api_name(api_func) not in _shimmed[0]
