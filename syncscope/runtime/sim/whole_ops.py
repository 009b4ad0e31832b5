"""Calls mode.py hands over whole rather than op by op: ops that must run whole on the CPU
tensors, `.to()` between device tensors, and the tests for functorch (vmap) wrappers around
simulated tensors."""

from __future__ import annotations

import torch

from syncscope.runtime.sim import devices, graphs, state
from syncscope.runtime.sim.tensor import _SimBase, wrap

_DisableSubclass = torch._C.DisableTorchFunctionSubclass
_NoPythonDispatch = torch._C._DisableTorchDispatch


def run_whole_on_cpu(call, func, args, kwargs):
    """Ops whose composite picks its kernel by device (`scaled_dot_product_attention` would
    choose among CUDA's flash/efficient/math paths for a tensor that says cuda, and autograd or
    inference mode would decompose it there): run the whole op on the CPU tensors, as plain CPU
    runs it, so the numbers are CPU eager's. No sync: the op has none on a GPU. `call`: mode.py's
    plain path, for a call with no simulated tensor."""
    if not any(isinstance(v, _SimBase) for v in (*args, *kwargs.values())):
        return call(func, args, kwargs)
    uargs = tuple(a._elem if isinstance(a, _SimBase) else a for a in args)
    ukwargs = {k: (v._elem if isinstance(v, _SimBase) else v) for k, v in kwargs.items()}
    for value in (*uargs, *ukwargs.values()):
        if isinstance(value, torch.Tensor) and value.dim() > 0 and not _came_from_sim(value, args, kwargs):
            raise RuntimeError(
                f"Expected all tensors to be on the same device, but found at least two devices, "
                f"{state.DEVICE} and cpu! (syncscope simulated device, in {state.api_name(func)})"
            )
    with _DisableSubclass(), _NoPythonDispatch():  # grad mode as the program set it: autograd.py
        out = func(*uargs, **ukwargs)
    if graphs.capturing[0]:
        graphs.note(lambda: out.copy_(func(*uargs, **ukwargs)))
    return wrap(out, next((v._sim_dev for v in (*args, *kwargs.values()) if isinstance(v, _SimBase)), None))


def _came_from_sim(value, args, kwargs) -> bool:
    return any(isinstance(a, _SimBase) and a._elem is value for a in (*args, *kwargs.values()))


def to_same_device(call, func, args, kwargs):
    """`cuda_t.to("cuda")` / `.to(cuda_t)` on a device tensor: torch's binding takes a CUDA
    DeviceGuard for the target device; the result is this tensor, or a device->device copy."""
    self = args[0]
    kwargs = dict(kwargs)
    flags = [a for a in args[1:] if type(a) is bool]
    copy = bool(kwargs.pop("copy", flags[1] if len(flags) > 1 else False))
    positional = tuple(a for a in args[1:] if type(a) is not bool)
    device, dtype, non_blocking, memory_format = torch._C._nn._parse_to(*positional, **kwargs)
    if device is not None and isinstance(self, _SimBase) and devices.resolve(device) != devices.of(self):
        moved = to_other_device(self, devices.resolve(device))
        return moved if dtype is None else call(func, (moved,), {"dtype": dtype})
    options = {"copy": copy}
    if dtype is not None:
        options["dtype"] = dtype
    if memory_format is not None:
        options["memory_format"] = memory_format
    return call(func, (self,), options)


_is_functorch_wrapped = torch._C._functorch.is_functorch_wrapped_tensor


def on_device_under_functorch(t) -> bool:
    """A functorch wrapper (vmap's BatchedTensor) around a simulated tensor: a device tensor, not
    a host one, though it is not our class."""
    if not isinstance(t, torch.Tensor) or not _is_functorch_wrapped(t):
        return False
    with _DisableSubclass():
        return t.device.type == "cuda"


def has_functorch_wrapped(args) -> bool:
    for arg in args:
        if isinstance(arg, torch.Tensor) and _is_functorch_wrapped(arg):
            return True
        if type(arg) in (list, tuple) and has_functorch_wrapped(arg):
            return True
    return False


def to_other_device(self, device):
    """A device tensor to `device` (`.cuda(1)`, `.to("cuda:1")`): itself when it is there, else
    a device-to-device copy (the host does not wait for one on a GPU: no sync)."""
    if devices.of(self) == device:
        return self
    with _DisableSubclass(), _NoPythonDispatch():
        elem = self._elem.clone()  # recorded by autograd when the data requires grad
    return wrap(elem, device)
