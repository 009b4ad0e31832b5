"""Triton kernels launched with simulated tensors run in Triton's interpreter on the CPU data.

`TRITON_INTERPRET=1` makes `@triton.jit` return an `InterpretedFunction` (numpy semantics, on
the host). Triton 3.x reads the variable when a kernel is *decorated* (`knobs.runtime.interpret`),
so `install()` sets it, and every kernel module imported afterwards is interpreted. A kernel
decorated before that (its module was imported before the device was installed) is a compiled
`JITFunction`; launching it with simulated tensors is rerouted to an `InterpretedFunction` built
from the same Python function, so it runs as well, with no GPU.

The interpreter copies each tensor argument's storage to the host, runs the grid, and copies it
back; a simulated tensor has no storage of its own, so its CPU tensor is passed instead (same
memory: the kernel's writes land in the simulated tensor). A launch is asynchronous on a GPU:
nothing is recorded.

`triton.runtime.driver.active` answers with the simulated device's driver while installed
(triton_driver.py): a CUDA target without libcuda.so.
"""

from __future__ import annotations

import os
import sys

from syncscope.runtime.sim.tensor import _SimBase


def _unwrap(value):
    if isinstance(value, _SimBase):
        return value._elem
    if type(value) is tuple:
        return tuple(_unwrap(v) for v in value)
    base = getattr(value, "base", None)
    if isinstance(base, _SimBase) and type(value).__name__ in ("TensorWrapper", "TensorDescriptor"):
        import copy

        clone = copy.copy(value)
        clone.base = base._elem
        return clone
    return value


def _has_sim(args, kwargs) -> bool:
    for value in list(args) + list(kwargs.values()):
        if isinstance(value, _SimBase) or isinstance(getattr(value, "base", None), _SimBase):
            return True
        if type(value) is tuple and any(isinstance(v, _SimBase) for v in value):
            return True
    return False


class TritonBridge:
    def __init__(self) -> None:
        self._env_before: str | None = None
        self._set_env = False
        self._patches = None
        self.note: str | None = None

    def install(self, patches) -> None:
        self._env_before = os.environ.get("TRITON_INTERPRET")
        if self._env_before != "1":
            os.environ["TRITON_INTERPRET"] = "1"
            self._set_env = True
        if "triton" in sys.modules and self._set_env:
            self.note = (
                "triton was imported before the simulated device was installed; kernels decorated "
                "before now are rerouted to the interpreter when launched with simulated tensors"
            )
        try:
            from triton.runtime import interpreter, jit
        except Exception as exc:  # triton missing or broken: tensors still work, kernels do not
            self.note = f"triton unavailable ({exc}); Triton kernels cannot run on the simulated device"
            return
        self._install_driver(patches)
        interpreted_run = interpreter.InterpretedFunction.run

        def run_interpreted(fn, *args, grid, warmup, **kwargs):
            if _has_sim(args, kwargs):
                args = tuple(_unwrap(a) for a in args)
                kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
            return interpreted_run(fn, *args, grid=grid, warmup=warmup, **kwargs)

        patches.set(interpreter.InterpretedFunction, "run", run_interpreted)

        jit_run = jit.JITFunction.run

        def run_jit(fn, *args, grid, warmup, **kwargs):
            if not _has_sim(args, kwargs):
                return jit_run(fn, *args, grid=grid, warmup=warmup, **kwargs)
            return run_interpreted(_interpreted(fn), *args, grid=grid, warmup=warmup, **kwargs)

        def _interpreted(fn):
            interp = fn.__dict__.get("_syncscope_interpreted")
            if interp is None:
                interp = interpreter.InterpretedFunction(fn.fn)
                fn.__dict__["_syncscope_interpreted"] = interp
            return interp

        def call_jit(fn, *args, **kwargs):
            # A compiled-mode @triton.jit helper called from inside an interpreted kernel: run
            # it as the interpreter's device function.
            return _interpreted(fn)(*args, **kwargs)

        patches.set(jit.JITFunction, "run", run_jit)
        patches.set(jit.JITFunction, "__call__", call_jit)

        try:
            from triton.runtime.autotuner import Autotuner
        except ImportError:
            return
        autotune_run = Autotuner.run

        def run_autotuned(tuner, *args, **kwargs):
            # Benchmarking configs needs GPU timers; on the simulated device every config
            # computes the same result, so take the first one that survives pruning.
            if len(tuner.configs) <= 1 or not _has_sim(args, kwargs):
                return autotune_run(tuner, *args, **kwargs)
            configs = tuner.configs
            try:
                tuner.nargs = dict(zip(tuner.arg_names, args))
                first = tuner.prune_configs(kwargs)[:1] or configs[:1]
            except Exception:
                first = configs[:1]
            tuner.configs = first
            try:
                return autotune_run(tuner, *args, **kwargs)
            finally:
                tuner.configs = configs

        patches.set(Autotuner, "run", run_autotuned)

    @staticmethod
    def _install_driver(patches) -> None:
        # `triton.runtime.driver.active` would build Triton's NVIDIA driver (torch says CUDA is
        # available), which needs libcuda.so: answer with a CUDA target that needs none
        # (triton_driver.py). Both the default and the active slot, whatever they held before
        # (None until first read); the patches put them back at uninstall.
        try:
            from triton.runtime.driver import driver as config  # the DriverConfig instance
        except ImportError:
            return
        if not hasattr(config, "_active"):
            return  # a Triton without the DriverConfig slots: nothing to replace
        from syncscope.runtime.sim.triton_driver import make_driver

        simulated = make_driver()
        patches.set(config, "_default", simulated)
        patches.set(config, "_active", simulated)

    def uninstall(self) -> None:
        if self._set_env:
            if self._env_before is None:
                os.environ.pop("TRITON_INTERPRET", None)
            else:
                os.environ["TRITON_INTERPRET"] = self._env_before
        self._set_env = False
