"""Several simulated GPUs: `cuda:0` ... `cuda:N-1`.

How many: `SYNCSCOPE_SIM_DEVICES` (default 2, so programs written for two GPUs run and a
`cuda:1` tensor is a tensor on a second device, as it is on a two-GPU machine; `1` makes the
simulated machine a one-GPU box where `cuda:1` fails as there). Each thread has a current device
(0 until `torch.cuda.set_device` / `with torch.cuda.device(i)` says otherwise), as in CUDA;
`device="cuda"` and `.cuda()` mean the current device.

A tensor's device index is kept on its wrapper (`_sim_dev`, unset for `cuda:0`), so dispatch.py
can check in one attribute read that an op's device tensors share a device (else torch's "Expected
all tensors to be on the same device" error) and give results their inputs' device. The data of
every device is host memory, so a device-to-device copy is a CPU copy; a GPU does it without the
host waiting, and so it is not a sync here either (`copy_` / `_to_copy` between device tensors
have no rule in the sync model); device<->host copies are reported as on one device.
"""

from __future__ import annotations

import threading

import torch

from syncscope.runtime.sim import state

from syncscope.runtime.sim.device_count import DEVICES_ENV as ENV, simulated_device_count


count = [1]  # set at install
DEVICES = [state.DEVICE]  # the canonical torch.device of each index (DEVICES[0] is state.DEVICE)
several = [False]  # a tensor has been placed on a device other than cuda:0: dispatch.py checks


class _Current(threading.local):
    index = 0


current = _Current()


def _invalid(index) -> RuntimeError:
    return RuntimeError(
        f"CUDA error: invalid device ordinal (syncscope simulated device: device {index} of "
        f"{count[0]}; set {ENV} for more simulated GPUs)"
    )


def index_of(device) -> int:
    """The device index a `device=` argument names (`"cuda"` / `None` index: the current one)."""
    if device is None:
        return current.index
    if isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        if isinstance(device, str):
            device = torch.device(device)
        index = device.index
        if index is None:
            return current.index
    if not 0 <= index < count[0]:
        raise _invalid(index)
    return index


def resolve(device) -> torch.device:
    index = index_of(device)
    if index:
        several[0] = True
    return DEVICES[index]


def of(t) -> torch.device:
    """A simulated tensor's device (a wrapper attribute: no torch call)."""
    return t._sim_dev or state.DEVICE


def mismatch(first, other) -> RuntimeError:
    return RuntimeError(
        f"Expected all tensors to be on the same device, but found at least two devices, "
        f"{of(first)} and {of(other)}! (syncscope simulated device)"
    )


def common(func, args, kwargs, cross_device_ok):
    """The device of an op's simulated tensors (None: cuda:0); torch's error if they differ
    (copies may take their source from another device: `x1.copy_(x0)`, `_to_copy`)."""
    from syncscope.runtime.sim.tensor import _SimBase

    first = None
    for value in (*args, *kwargs.values()):
        items = value if type(value) in (list, tuple) else (value,)
        for item in items:
            if isinstance(item, _SimBase):
                if first is None:
                    first = item
                elif item._sim_dev != first._sim_dev and func not in cross_device_ok:
                    raise mismatch(first, item)
    return None if first is None else first._sim_dev


# -- the torch.cuda / torch.accelerator answers ---------------------------------------------------
def set_device(device) -> None:
    if device is None or (isinstance(device, int) and device < 0):
        return  # torch: a negative index is a no-op
    current.index = index_of(device)


class device:
    """`with torch.cuda.device(i):` switch this thread's current device, and back."""

    def __init__(self, device):
        self.idx = -1 if device is None else index_of(device)
        self.prev_idx = -1

    def __enter__(self):
        self.prev_idx = current.index
        if self.idx >= 0:
            current.index = self.idx
        return self

    def __exit__(self, *exc):
        if self.idx >= 0:
            current.index = self.prev_idx
        return False


class device_of(device):
    def __init__(self, obj):
        is_device = isinstance(obj, torch.Tensor) and getattr(obj, "_sim_dev", _NOT_SIM) is not _NOT_SIM
        super().__init__(of(obj).index if is_device else None)


_NOT_SIM = object()


def _checked(answer):
    def call(device=None):
        if device is not None:
            index_of(device)
        return answer(device)

    return call


def install(p) -> None:
    """After cuda_api.install: replaces its one-device answers."""
    count[0] = simulated_device_count()
    DEVICES[:] = [state.DEVICE] + [torch.device("cuda", i) for i in range(1, count[0])]
    several[0] = False
    current.index = 0
    cuda = torch.cuda
    props = cuda.get_device_properties()
    values = {
        "device_count": lambda: count[0],
        "current_device": lambda: current.index,
        "set_device": set_device,
        "device": device,
        "device_of": device_of,
        "get_device_properties": _checked(lambda device: props),
        "get_device_name": _checked(lambda device: props.name),
        "get_device_capability": _checked(lambda device: (props.major, props.minor)),
    }
    for name, value in values.items():
        p.set(cuda, name, value)
    acc = getattr(torch, "accelerator", None)
    if acc is not None:
        for name, value in {
            "device_count": lambda: count[0],
            "current_device_index": lambda: current.index,
            "current_device_idx": lambda: current.index,
            "set_device_index": set_device,
            "set_device_idx": set_device,
            "device_index": device,  # `with torch.accelerator.device_index(i)` (nn.parallel)
        }.items():
            if hasattr(acc, name):
                p.set(acc, name, value)


def uninstall() -> None:
    several[0] = False
    current.index = 0
