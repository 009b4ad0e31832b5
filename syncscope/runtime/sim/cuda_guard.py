"""The rest of `torch.cuda` on the simulated device: what cuda_api.py does not answer itself is
either answered here (RNG, memory statistics, allocator queries: cheap answers a program can go
on with) or fails with a `SimulatedDeviceError` that names the call and a way out, never with
torch's `module 'torch._C' has no attribute '_cuda_getDevice'` or a C++ abort.

Three passes at install, all undone by `Patches`:
1. mirror: torch's submodules (`torch.cuda.random`, `.memory`, `.streams`, `.graphs`) hold the
   same function objects `torch.cuda` re-exports; a program that calls
   `torch.cuda.random.manual_seed` must get the simulated one too;
2. answer the extra names below;
3. guard every other public function of `torch.cuda` and its submodules: call it, and turn an
   error that only says "this build has no CUDA" into a SimulatedDeviceError. Errors about the
   program's own arguments (TypeError, ValueError) pass through unchanged.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types

import torch

from syncscope.runtime.sim import state

SUBMODULES = ("random", "memory", "streams", "graphs", "nvtx", "amp", "profiler", "jiterator", "tunable", "gds", "comm", "sparse")

# What a CPU-only build says when a call needs CUDA (AttributeError on torch._C's `_cuda_*`,
# `cudart()` being None, the stream/event/mem-pool dummies, NVML missing, ...).
_NO_CUDA = (
    "_cuda",
    "'NoneType' object has no attribute 'cuda",
    "requires CUDA support",
    "not compiled with CUDA",
    "not linked with support for cuda",
    "dummy base class",
    "not supported on this platform",
    "device not recognized: cuda",
    "nvidia-ml-py",
    "pynvml",
    "amdsmi",
    "NCCL",
)

_MEMORY_KEYS = (
    "allocated_bytes.all.current", "allocated_bytes.all.peak", "allocated_bytes.all.allocated",
    "allocated_bytes.all.freed", "reserved_bytes.all.current", "reserved_bytes.all.peak",
    "active_bytes.all.current", "active_bytes.all.peak", "inactive_split_bytes.all.current",
    "requested_bytes.all.current", "requested_bytes.all.peak", "num_alloc_retries", "num_ooms",
    "num_device_alloc", "num_device_free",
)


def _memory_stats(device=None) -> dict:
    # The simulated device's memory is the host's; it keeps no allocator statistics. Zeros with
    # torch's keys let `memory_stats()["allocated_bytes.all.peak"]` and memory_summary() run.
    return dict.fromkeys(_MEMORY_KEYS, 0)


def _memory_summary(device=None, abbreviated: bool = False) -> str:
    return f"|{'syncscope simulated CUDA device: memory lives on the host; no allocator statistics':^76}|\n"


def _get_rng_state_all():
    return [torch.get_rng_state()]


def _set_rng_state_all(new_states) -> None:
    for new_state in new_states:
        torch.set_rng_state(new_state)


def _seed() -> None:
    torch.seed()


class SimMemPool:
    """`torch.cuda.MemPool`: a name for a group of allocations; the host allocator ignores it."""

    def __init__(self, allocator=None, use_on_oom: bool = False, **kwargs) -> None:
        self.allocator = allocator
        self.id = (0, id(self))

    def use_count(self) -> int:
        return 1

    def snapshot(self) -> list:
        return []


class _UseMemPool:
    def __init__(self, pool, device=None) -> None:
        self.pool = pool

    def __enter__(self):
        return self.pool

    def __exit__(self, *exc):
        return False


def _answers() -> dict:
    from syncscope.runtime.sim import cuda_api

    return {
        "initial_seed": torch.initial_seed,
        "seed": _seed,
        "seed_all": _seed,
        "get_rng_state_all": _get_rng_state_all,
        "set_rng_state_all": _set_rng_state_all,
        "memory_stats": _memory_stats,
        "memory_stats_as_nested_dict": lambda device=None: {},
        "memory_summary": _memory_summary,
        "memory_snapshot": lambda *args, **kwargs: [],
        "memory_cached": lambda device=None: 0,
        "max_memory_cached": lambda device=None: 0,
        "reset_max_memory_cached": lambda device=None: None,
        "host_memory_stats": lambda: {},
        "reset_peak_host_memory_stats": lambda: None,
        "reset_accumulated_host_memory_stats": lambda: None,
        "get_allocator_backend": lambda: "native",
        "get_per_process_memory_fraction": lambda device=None: 1.0,
        "set_per_process_memory_fraction": lambda fraction, device=None: None,
        "list_gpu_processes": lambda device=None: f"GPU:0\n{state.DEVICE_NAME}: no processes",
        "MemPool": SimMemPool,
        "use_mem_pool": _UseMemPool,
        "ExternalStream": cuda_api.SimStream,
    }


def _submodules() -> list[types.ModuleType]:
    found = []
    for name in SUBMODULES:
        module = sys.modules.get(f"torch.cuda.{name}") or getattr(torch.cuda, name, None)
        if isinstance(module, types.ModuleType):
            found.append(module)
    return found


def install(p) -> None:
    """Run after cuda_api and graphs have installed theirs (`p`: their Patches)."""
    cuda = torch.cuda
    for name, value in _answers().items():
        if hasattr(cuda, name):
            p.set(cuda, name, value)
    # 1. mirror: the originals of everything replaced on torch.cuda, wherever else they live
    replaced = {
        id(old): getattr(cuda, name)
        for owner, name, old in list(p._saved)
        if owner is cuda and getattr(old, "__module__", "").startswith("torch")  # torch's own, not ours
    }
    modules = _submodules()
    for module in modules:
        for name, value in list(vars(module).items()):
            if not name.startswith("_") and id(value) in replaced and callable(value):
                p.set(module, name, replaced[id(value)])
    # 3. guard the rest
    simulated = {id(getattr(cuda, name)) for owner, name, _old in p._saved if owner is cuda}
    for module in (cuda, *modules):
        prefix = module.__name__
        for name, value in list(vars(module).items()):
            if name.startswith("_") or not inspect.isfunction(value) or id(value) in simulated:
                continue
            if not getattr(value, "__module__", "").startswith("torch.cuda"):
                continue  # a helper imported from elsewhere (typing, functools, ...)
            p.set(module, name, _guarded(f"{prefix}.{name}", value))


def _guarded(qualname: str, func):
    @functools.wraps(func)
    def call(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (AttributeError, RuntimeError, AssertionError, ImportError, KeyError) as exc:
            if _says_no_cuda(exc):
                raise unsimulated(qualname, exc) from exc
            raise

    return call


def _says_no_cuda(exc: BaseException) -> bool:
    if isinstance(exc, RuntimeError) and torch.version.cuda is not None:
        # A CUDA build of torch: the simulated device never initialized the real CUDA state, so
        # an unsimulated call fails on it in its own words (seen on the H100: "Allocator not
        # initialized for device" from torch.cuda.current_blas_handle).
        return True
    text = str(exc)
    return any(marker in text for marker in _NO_CUDA)


def unsimulated(qualname: str, exc: BaseException | None = None):
    from syncscope.runtime.sim.dispatch import SimulatedDeviceError

    said = f" (torch said: {str(exc).splitlines()[0][:160]})" if exc is not None and str(exc) else ""
    return SimulatedDeviceError(
        f"syncscope simulated CUDA device: {qualname} is not simulated: it needs a real GPU "
        f"(driver, NVML or a CUDA build of torch). Ways out: run this program on a GPU "
        f"(`syncscope run --device cuda`), or skip this call when "
        f"`syncscope.runtime.sim.is_simulated()` is true.{said}"
    )
