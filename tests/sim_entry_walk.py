"""Run by tests/test_sim_entry_points.py in a subprocess: under the simulated device, call every
public callable of `torch.cuda` (and its submodules) and every `torch.*` function that takes a
`device=` with `device="cuda"`, each with a few argument shapes, and log START/END lines so the
parent can tell a clean run from a process abort (and which call aborted).

    python tests/sim_entry_walk.py LOG
"""

from __future__ import annotations

import inspect
import sys
import types
import warnings

import torch

import syncscope
from syncscope.runtime.sim import cuda_guard

# Calls that change the process for every call after them (not what is being tested).
_LEAVE_OUT = {"torch.set_default_device", "torch.set_default_dtype", "torch.set_default_tensor_type",
              "torch.cuda.set_per_process_memory_fraction", "torch.set_num_threads", "torch.set_num_interop_threads"}


def _cuda_callables():
    modules = [(torch.cuda, "torch.cuda")]
    for name in cuda_guard.SUBMODULES:
        module = getattr(torch.cuda, name, None)
        if isinstance(module, types.ModuleType):
            modules.append((module, f"torch.cuda.{name}"))
    for module, prefix in modules:
        for name in sorted(dir(module)):
            value = getattr(module, name, None)
            if name.startswith("_") or not callable(value) or (inspect.isclass(value) and issubclass(value, BaseException)):
                continue
            yield f"{prefix}.{name}", value, inspect.isclass(value), {}


def _device_taking():
    for name in sorted(dir(torch)):
        value = getattr(torch, name, None)
        if name.startswith("_") or not callable(value) or inspect.isclass(value) or isinstance(value, types.ModuleType):
            continue
        if "device" in (getattr(value, "__doc__", "") or ""):
            yield f"torch.{name}", value, False, {"device": "cuda"}


def main(log_path: str) -> None:
    warnings.simplefilter("ignore")
    with open(log_path, "w") as log, syncscope.trap(device="sim"):
        x = torch.ones(4, device="cuda")
        for qualname, func, is_class, kwargs in [*_cuda_callables(), *_device_taking()]:
            if qualname in _LEAVE_OUT:
                continue
            for args in ((), (0,), ("cuda",), (x,), ((2, 2),)):
                log.write(f"START\t{qualname}\t{is_class}\n")
                log.flush()
                try:
                    func(*args, **kwargs)
                    outcome = "ok\t"
                except BaseException as exc:  # noqa: BLE001 - every outcome is data here
                    outcome = f"{type(exc).__name__}\t{str(exc).splitlines()[0][:300] if str(exc) else ''}"
                log.write(f"END\t{qualname}\t{is_class}\t{outcome}\n")
                log.flush()
    print("walk done")


if __name__ == "__main__":
    main(sys.argv[1])
