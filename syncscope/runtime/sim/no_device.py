"""Whether an op failed only because this machine has no real CUDA device to guard.

The simulated device's tensors say `cuda`; some of torch's C++ bindings take a CUDA DeviceGuard
before dispatching, which fails on a machine without a GPU. The simulated device then runs the
op again on CPU-device views of its tensors (mode.py, dispatch.py).
"""

from __future__ import annotations

# What the guard's failure says: on a CPU-only build of torch, and on a CUDA build with no usable
# GPU (no driver, an older driver, no device; seen with torch 2.13+cu130 on a machine without one).
_NO_DEVICE = (
    "not linked with support for cuda",
    "'CUDA' backend",
    "Found no NVIDIA driver",
    "CUDA driver version is insufficient",
    "no CUDA-capable device is detected",
    "cudaErrorNoDevice",
    "cudaErrorInsufficientDriver",
)


def needs_a_real_device(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, RuntimeError) and any(marker in text for marker in _NO_DEVICE)
