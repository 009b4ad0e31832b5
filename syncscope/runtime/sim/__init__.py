"""The simulated CUDA device: run an unmodified CUDA program on the CPU and find the syncs a GPU
would have had. See docs/simulated-device.md.

- tensor.py      `SimulatedCudaTensor` (wrapper subclass on `cuda:0` holding a CPU tensor)
- dispatch.py    `__torch_dispatch__`: sync model check, run the CPU op, wrap results
- sync_model.py  which aten op with which arguments blocks the host (tags + argument rules)
- mode.py        the Python-API layer: factories, host->device copies, DeviceGuard replay
- cuda_api.py    the fake `torch.cuda` surface: devices, streams, events, synchronize
- race.py        the non_blocking device->host read-before-sync hazard
- triton_bridge.py  Triton kernels on simulated tensors through the interpreter
- autograd.py    autograd: the graph on the held CPU tensors, backward ops through the sync model
- devices.py     several simulated GPUs (cuda:0, cuda:1, ...), the current device per thread
  (device_count.py: how many; comm.py: nn.DataParallel's scatter/gather across them)
- custom_functions.py  custom autograd Functions on the held tensors
- detector.py    `SimulatedCudaDetector` (install / uninstall)
"""

from __future__ import annotations


def __getattr__(name: str):
    try:
        return _load(name)
    except AttributeError as exc:  # keep a broken import from reading as "cannot import name"
        if name in __all__:
            raise ImportError(f"syncscope.runtime.sim: loading {name} failed: {exc!r}") from exc
        raise


def _load(name: str):
    if name == "SimulatedCudaDetector":
        from syncscope.runtime.sim.detector import SimulatedCudaDetector

        return SimulatedCudaDetector
    if name == "SimulatedCudaTensor":
        from syncscope.runtime.sim.tensor import SimulatedCudaTensor

        return SimulatedCudaTensor
    if name == "SimulatedDeviceError":
        from syncscope.runtime.sim.dispatch import SimulatedDeviceError

        return SimulatedDeviceError
    raise AttributeError(f"module 'syncscope.runtime.sim' has no attribute {name!r}")


def is_simulated() -> bool:
    """True while the simulated device is installed (for the rare path a program must skip)."""
    from syncscope.runtime.sim.detector import SimulatedCudaDetector

    return SimulatedCudaDetector._installed


__all__ = ["SimulatedCudaDetector", "SimulatedCudaTensor", "SimulatedDeviceError", "is_simulated"]
