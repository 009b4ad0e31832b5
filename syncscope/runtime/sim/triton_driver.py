"""The Triton driver of the simulated device: a CUDA target with no CUDA library behind it.

Under `--device sim`, `torch.cuda.is_available()` is True, so Triton's NVIDIA driver calls itself
active (it asks torch, not the driver library, once torch is imported) and the first read of
`triton.runtime.driver.active` builds it: that compiles Triton's C helper against `libcuda.so`
and fails with an `AssertionError` ("libcuda.so cannot found!") on a machine without one. Programs
reach it without launching anything: vLLM's linear-attention ops ask
`driver.active.get_current_target().backend` at import time to learn the GPU vendor, and Triton's
`tl.target_info` asks it while a kernel is traced.

While the simulated device is installed, `triton.runtime.driver` answers with this driver instead:
the current target is CUDA with the simulated device's capability (9.0 by default) and warp size
32, the device and stream come from the simulated `torch.cuda`, and `utils.get_device_properties`
answers the figures of the simulated device's properties. Kernels do not go through it: launches
with simulated tensors run in Triton's interpreter (triton_bridge.py). What needs a real driver
(loading a compiled binary, timing a kernel) raises `SimulatedDeviceError` saying so.
"""

from __future__ import annotations

# Shared memory per block (opt-in) of the GPUs whose capabilities the simulated device may report;
# code sizes tiles from it (vLLM's FLA ops compare it with the H100's 232448).
_MAX_SHARED_MEM = {9: 232448, 8: 166912, 10: 232448, 12: 101376}
_DEFAULT_SHARED_MEM = 101376


class _NeedsGpu:
    """Stands for what only a real driver library can do."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __call__(self, *args, **kwargs):
        from syncscope.runtime.sim.dispatch import SimulatedDeviceError

        raise SimulatedDeviceError(
            f"{self._what} needs a real CUDA driver; the simulated device runs Triton kernels in "
            "Triton's interpreter (run on a GPU with --device cuda for this)"
        )


class SimulatedCudaUtils:
    """The part of Triton's `CudaUtils` that answers questions about the device."""

    load_binary = _NeedsGpu("loading a compiled Triton kernel")
    unload_module = _NeedsGpu("unloading a compiled Triton kernel")
    launch = _NeedsGpu("launching a compiled Triton kernel")
    fill_tma_descriptor_tiled = _NeedsGpu("a TMA descriptor")
    fill_tma_descriptor_im2col = _NeedsGpu("a TMA descriptor")
    cuOccupancyMaxActiveClusters = _NeedsGpu("an occupancy query")

    def get_device_properties(self, device) -> dict:
        import torch

        props = torch.cuda.get_device_properties(device)
        return {
            "max_shared_mem": _MAX_SHARED_MEM.get(props.major, _DEFAULT_SHARED_MEM),
            "max_num_regs": props.regs_per_multiprocessor,
            "multiprocessor_count": props.multi_processor_count,
            "warpSize": props.warp_size,
            "sm_clock_rate": 0,
            "mem_clock_rate": 0,
            "mem_bus_width": 0,
        }

    def get_device_capability(self, device) -> tuple[int, int]:
        import torch

        return tuple(torch.cuda.get_device_capability(device))

    def get_current_device(self) -> int:
        import torch

        return torch.cuda.current_device()

    def set_current_device(self, device) -> None:
        import torch

        torch.cuda.set_device(device)

    def set_printf_fifo_size(self, size) -> None:
        pass  # the interpreter prints on the host: there is no device buffer to size

    def is_stream_capturing(self, *args) -> bool:
        import torch

        return torch.cuda.is_current_stream_capturing()


def make_driver():
    """A driver instance of a `DriverBase` subclass (built here so that importing this module does
    not import Triton)."""
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import DriverBase

    class SimulatedCudaDriver(DriverBase):
        """Reports a CUDA target of the simulated device's capability; needs no libcuda."""

        def __init__(self) -> None:
            super().__init__()
            self.utils = SimulatedCudaUtils()
            self.get_device_capability = self.utils.get_device_capability
            self.get_current_device = self.utils.get_current_device
            self.set_current_device = self.utils.set_current_device

        @staticmethod
        def is_active() -> bool:
            return True  # only ever installed explicitly, by the simulated device

        def get_current_stream(self, device=None) -> int:
            import torch

            return torch.cuda.current_stream(device).cuda_stream

        def get_current_target(self):
            major, minor = self.get_device_capability(self.get_current_device())
            return GPUTarget("cuda", major * 10 + minor, 32)

        def get_active_torch_device(self):
            import torch

            return torch.device("cuda", self.get_current_device())

        def get_device_interface(self):
            import torch

            return torch.cuda

        def map_python_to_cpp_type(self, ty: str) -> str:
            from triton.backends.nvidia.driver import ty_to_cpp

            return ty_to_cpp(ty)

        def get_benchmarker(self):
            return _NeedsGpu("timing a Triton kernel (benchmarking)")

        def get_empty_cache_for_benchmark(self):
            return _NeedsGpu("timing a Triton kernel (benchmarking)")()

        def clear_cache(self, cache) -> None:
            cache.zero_()

        def assemble_tensormap_to_arg(self, tensormaps_info, args):
            return args

    return SimulatedCudaDriver()
