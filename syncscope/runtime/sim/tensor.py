"""The tensors of the simulated device.

`SimulatedCudaTensor` is a wrapper subclass: to torch (and to the program) it is a tensor on
`cuda:0`, but it owns no storage of its own and holds a plain CPU tensor, `_elem`, where the data
lives. Every aten op on it reaches `__torch_dispatch__`, which asks the sync model whether the op
would block the host on a GPU, then runs the same op on the CPU tensors (so the numbers are
exactly CPU eager's) and wraps the results again.

`HostGuardView` is the same wrapper reporting `device == cpu`. torch's C++ Python bindings for
indexing, `nonzero()`, `int(t)` and `new_tensor` take a CUDA DeviceGuard before they dispatch,
and a CPU-only build has no CUDA guard ("PyTorch is not linked with support for cuda devices").
Those calls are replayed on HostGuardViews of the same data (see `mode.py`): the guard is then a
CPU one, the ops still reach our `__torch_dispatch__` as device tensors (it is the wrapper class,
not the reported device, that marks device memory), and the results are turned back into
SimulatedCudaTensors.

Host memory flags the simulated device keeps: which plain CPU tensors are "pinned" (a CPU-only
build has no pinned allocator).
"""

from __future__ import annotations

import weakref

import torch

from syncscope.runtime.sim import state

_make_wrapper = torch.Tensor._make_wrapper_subclass
_CPU = torch.device("cpu")
_TensorBase = torch._C.TensorBase
_torch_function_enabled = torch._C._is_torch_function_enabled
# The number-protocol conversions `_SimBase` names as the real-GPU detector's shims do (a test
# checks them against cuda.py's list).
NUMBER_CONVERSIONS = ("__index__", "__int__", "__float__", "__bool__")


def _converting(method, t):
    local = state.local
    previous, previous_args = local.api, local.api_args
    local.api, local.api_args = method, (t,)
    try:
        if _torch_function_enabled() or type(t) is not SimulatedCudaTensor:
            return method(t)  # the program's own call: mode.py's handler replays it
        # Asked by torch's C++ inside a torch call (the handler is off there): the conversion's
        # DeviceGuard would need a CUDA device, so convert a CPU-device view of the same data (the
        # replay of mode.py, done here; its `item` still reaches dispatch.py as a device read).
        return method(wrap_view(t._elem))
    finally:
        local.api, local.api_args = previous, previous_args


class _SimBase(torch.Tensor):
    """Shared by both wrappers: the held CPU tensor and the dispatch entry point."""

    _elem: torch.Tensor
    _sim_dev = None  # the device, for cuda:1 and up (devices.py); None: cuda:0

    # The Python-API layer lives in mode.py (a torch-function handler); keep torch's default
    # subclass handling out of the hot path.
    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(cls, func, args, kwargs or {})

    # Python's number protocol (`operator.index(t)`, `float(t)`, `if t:`), also when torch's C++
    # asks it: an `int` argument (`x.softmax(dim=t)`), a `float` one, a slice bound (`x[:t]`).
    # The real-GPU detector shims these four on torch.Tensor, so a sync there is named after the
    # conversion (`item`), not after the C++ call that asked for it (`other`): named here too, as
    # the Python call in progress, since torch's own hook for them is off inside a torch call.
    def __index__(self):
        return _converting(_TensorBase.__index__, self)

    def __int__(self):
        return _converting(_TensorBase.__int__, self)

    def __float__(self):
        return _converting(_TensorBase.__float__, self)

    def __bool__(self):
        return _converting(_TensorBase.__bool__, self)

    # The real CUDA tensor's answers for host-side questions.
    def __reduce_ex__(self, proto):  # pickling a device tensor: like torch, go through the host
        raise TypeError(
            "syncscope simulated device: pickling a simulated CUDA tensor is not supported; "
            "call .cpu() first (as the real program would need to for a host copy)"
        )


class SimulatedCudaTensor(_SimBase):
    """A tensor that reports `device.type == "cuda"` and holds its data in a CPU tensor."""

    @staticmethod
    def __new__(cls, elem: torch.Tensor, device: torch.device | None = None):
        return wrap(elem, device)

    def __repr__(self, *, tensor_contents=None):
        return _repr(self)

    # The torch-function handler in mode.py routes Python-level calls on these tensors; it is
    # installed as a classmethod by `mode.install_subclass_handler` so it works in every thread.


class HostGuardView(_SimBase):
    """A SimulatedCudaTensor's data seen through a CPU-device wrapper, used only while replaying a
    call whose C++ binding would otherwise need a CUDA DeviceGuard."""

    def __repr__(self, *, tensor_contents=None):
        return f"HostGuardView({self._elem!r})"


def _wrapper_around(cls: type, elem: torch.Tensor, device: torch.device, requires_grad: bool):
    """A `cls` wrapper with `elem`'s geometry, reporting `device`, holding `elem`."""
    try:
        strides, offset = elem.stride(), elem.storage_offset()
    except RuntimeError:  # sparse compressed layouts (CSR, CSC, BSR, BSC) have no strides
        return _strideless_wrapper_around(cls, elem, device, requires_grad)
    out = _make_wrapper(
        cls,
        elem.size(),
        strides=strides,
        storage_offset=offset,
        dtype=elem.dtype,
        layout=elem.layout,
        device=device,
        requires_grad=requires_grad,
    )
    out._elem = elem
    if device.index:
        out._sim_dev = device
    return out


def _strideless_wrapper_around(cls: type, elem: torch.Tensor, device: torch.device, requires_grad: bool):
    """torch's C++ asks a tensor of a sparse compressed layout for its layout through an
    implementation a wrapper does not have: the wrapper's layout and strides are asked of
    `__torch_dispatch__` instead (`prim.layout`, `aten.stride`), which answers with `elem`'s."""
    out = _make_wrapper(
        cls,
        elem.size(),
        dtype=elem.dtype,
        layout=elem.layout,
        device=device,
        requires_grad=requires_grad,
        dispatch_layout=True,
        dispatch_sizes_strides_policy="strides",
    )
    out._elem = elem
    return out


def wrap(elem: torch.Tensor, device: torch.device | None = None) -> SimulatedCudaTensor:
    # Never requires grad itself: autograd runs on `elem` (autograd.py says why).
    return _wrapper_around(SimulatedCudaTensor, elem, device or state.DEVICE, False)


def wrap_view(elem: torch.Tensor) -> HostGuardView:
    return _wrapper_around(HostGuardView, elem, _CPU, False)


def wrap_as(cls: type, elem: torch.Tensor, device: torch.device | None = None):
    if cls is HostGuardView and not state.local.views_as_device:
        return wrap_view(elem)
    return wrap(elem, device)


# -- pinned host memory ------------------------------------------------------------------------
# A CPU-only build cannot pin. We keep the flag ourselves: by tensor object (weakly) and by the
# address of its storage, so views of a pinned buffer (`pinned[:n]`) count as pinned too.
_pinned_storage: dict[int, weakref.ref] = {}


def mark_pinned(t: torch.Tensor) -> torch.Tensor:
    key = t.untyped_storage().data_ptr()
    _pinned_storage[key] = weakref.ref(t, lambda _ref, key=key: _pinned_storage.pop(key, None))
    return t


def is_pinned(t: torch.Tensor) -> bool:
    if isinstance(t, _SimBase):
        return False
    if _pinned_storage:
        try:
            ref = _pinned_storage.get(t.untyped_storage().data_ptr())
        except RuntimeError:
            ref = None
        if ref is not None and ref() is not None:
            return True
    # Memory pinned for real (a CUDA build of torch running the simulated device, a buffer
    # pinned before install); a CPU-only build answers False.
    try:
        with _NoTorchFunction():
            return bool(t.is_pinned())
    except RuntimeError:
        return False


_NoTorchFunction = torch._C.DisableTorchFunction


# The dispatch body lives in dispatch.py (it needs these classes); dispatch.py binds these two
# names when it is imported (the detector always imports it).
def _dispatch(cls, func, args, kwargs):
    raise RuntimeError("syncscope.runtime.sim.dispatch was not imported")


def _repr(t) -> str:
    return f"SimulatedCudaTensor({t._elem!r})"


def unwrap_nested(data):
    """`data` with every simulated tensor in it, at any depth of lists and tuples, swapped for the
    CPU tensor it holds: what a factory (`torch.tensor([t0, t1], device="cuda")`) reads values
    from on the host. The caller records the sync."""
    if isinstance(data, _SimBase):
        return data._elem
    if type(data) in (list, tuple):
        return type(data)(unwrap_nested(item) for item in data)
    return data


def holds_simulated(data) -> bool:
    """Whether a simulated tensor sits anywhere in `data` (lists and tuples, at any depth)."""
    if isinstance(data, _SimBase):
        return True
    return type(data) in (list, tuple) and any(holds_simulated(item) for item in data)
