"""Make vLLM's platform a CUDA one on the simulated device (`syncscope run --device sim`).

What it changes, and why:

1. vLLM is imported under its *unspecified* platform. Selecting the CUDA platform the normal way
   fails on a machine without a GPU: `vllm.platforms.cuda` imports the compiled
   `vllm._C_stable_libtorch` (which needs `libcuda.so.1`), then queries compiled ops at import
   time, then loads flash-attention's extension. vLLM's own detection (NVML) finds no GPU here and
   picks `UnspecifiedPlatform`, which imports cleanly and only logs that `vllm._C` is missing.
2. The one shared platform object (`vllm.platforms.current_platform`, the instance every vLLM
   module imported by name) then has its class swapped for `SimulatedCudaPlatform`, a subclass
   of the unspecified platform's class that answers as vLLM's `CudaPlatformBase` does for the
   questions the metadata builders ask: `is_cuda()` / `is_cuda_alike()` True, device type and
   dispatch key "cuda" / "CUDA", the simulated device's capability (9.0, an H100's), its name
   and memory. Nothing else in vLLM is patched, and no builder code is changed: the builders run
   as they would on an H100, and every tensor they put on "cuda" is a simulated device tensor.

`boot(*modules)` imports the modules under test, and those they import lazily, *before* the swap:
under the CUDA platform, importing vLLM's model layers queries compiled ops
(`torch.ops._C.cutlass_scaled_mm_supports_block_fp8`, ...) that a wheel without its CUDA
extension does not have. Module-level choices made at import therefore follow the unspecified
platform, except where vLLM asks Triton (its FLA ops ask `triton.runtime.driver.active`, which
the simulated device answers with a CUDA target). It runs after the simulated device is
installed (`syncscope run` installs it before the script runs).
"""

from __future__ import annotations

import torch


def boot(*modules: str, capability: tuple[int, int] | None = None):
    """Import `modules` (the ones under test and those they import lazily) under the unspecified
    platform, then turn the shared platform object into a CUDA platform; return it.

    `capability`: what vLLM's platform answers for the device's compute capability, when it is
    not the simulated device's own (9.0). vLLM picks kernels by it (FlashInfer's TRT-LLM prefill
    exists only on SM100), so a script can run a builder as it runs on a B200; only vLLM's
    platform object says so: `torch.cuda` and the libraries that ask it still see 9.0."""
    if not torch.cuda.is_available():
        raise SystemExit("sim_boot: run me under `syncscope run --device sim` (no CUDA device here)")
    import importlib

    import vllm.platforms as platforms

    for name in modules:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if not (exc.name and name.startswith(exc.name)):
                raise  # a dependency is missing: say so
            # this release has no such module (the scripts serve several releases)
    from vllm.platforms.interface import DeviceCapability, PlatformEnum

    platform = platforms.current_platform
    if platform.is_cuda():
        return platform  # a real CUDA platform (a GPU machine): nothing to do
    base = type(platform)

    class SimulatedCudaPlatform(base):
        _enum = PlatformEnum.CUDA
        device_name = "cuda"
        device_type = "cuda"
        dispatch_key = "CUDA"
        ray_device_key = "GPU"
        dist_backend = "nccl"
        device_control_env_var = "CUDA_VISIBLE_DEVICES"
        simple_compile_backend = "inductor"

        @classmethod
        def get_device_capability(cls, device_id: int = 0):
            major, minor = capability or torch.cuda.get_device_capability(device_id)
            return DeviceCapability(major=major, minor=minor)

        @classmethod
        def get_device_name(cls, device_id: int = 0) -> str:
            return torch.cuda.get_device_name(device_id)

        @classmethod
        def get_device_total_memory(cls, device_id: int = 0) -> int:
            return torch.cuda.get_device_properties(device_id).total_memory

        @classmethod
        def num_compute_units(cls, device_id: int = 0) -> int:
            # the SM count (FlashMLA's builder sizes its scheduler buffers by it)
            return torch.cuda.get_device_properties(device_id).multi_processor_count

        @classmethod
        def is_pin_memory_available(cls) -> bool:
            return True

        @classmethod
        def set_device(cls, device) -> None:
            torch.cuda.set_device(device)

        @classmethod
        def fp8_dtype(cls):
            return torch.float8_e4m3fn

        @classmethod
        def support_hybrid_kv_cache(cls) -> bool:
            return True

    SimulatedCudaPlatform.__name__ = SimulatedCudaPlatform.__qualname__ = "SimulatedCudaPlatform"
    platform.__class__ = SimulatedCudaPlatform
    return platform
