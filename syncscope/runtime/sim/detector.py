"""`SimulatedCudaDetector`: installs the simulated CUDA device into torch and takes it out again."""

from __future__ import annotations

import threading

import torch

from syncscope.runtime.sim import (
    autocast, autograd, comm, compile_eager, cuda_api, cuda_guard, custom_functions, devices, graphs, lazy_params, mode, race, state,
    subclasses, unsupported,
)
from syncscope.runtime.sim.tensor import _SimBase
from syncscope.runtime.sim.triton_bridge import TritonBridge

_F = torch.nn.functional


class SimulatedCudaDetector:
    """The detector for `--device sim`: the unmodified CUDA program runs on the CPU and each sync
    a GPU would have had is recorded (kind, site, stack, region; blocked time not measured)."""

    name = "sim"
    _lock = threading.Lock()
    _installed = False

    def __init__(self) -> None:
        self._patches = cuda_api.Patches()
        self._threads = mode.ThreadModes()
        self._triton = TritonBridge()
        self._previous_debug_mode = 0

    @property
    def note(self) -> str | None:
        return self._triton.note

    def install(self, recorder) -> None:
        with SimulatedCudaDetector._lock:
            if SimulatedCudaDetector._installed:
                raise RuntimeError("the syncscope simulated device is already installed in this process")
            SimulatedCudaDetector._installed = True
        try:
            _import_dynamo_first()
            state.S.recorder = recorder
            self._previous_debug_mode = state.S.debug_mode
            state.S.debug_mode = 0
            state.on_sync_hooks[:] = [race.on_sync]
            cuda_api.install(self._patches)
            devices.install(self._patches)  # after cuda_api: several GPUs instead of its one
            comm.install(self._patches)  # nn.DataParallel's scatter/gather across them
            autocast.install(self._patches)
            graphs.install(self._patches)
            compile_eager.install(self._patches)
            autograd.install(self._patches)
            custom_functions.install(self._patches)
            cuda_guard.install(self._patches)  # it mirrors and guards what is left
            unsupported.install(self._patches, mode._SPECIAL, mode._call)  # the named refusals
            self._patch_one_hot()
            self._patch_shallow_copy_check()
            lazy_params.guard_moves(mode._SPECIAL, mode._call)  # nn.LazyLinear moved with .cuda()
            lazy_params.patch_materialize(self._patches)
            subclasses.guard_moves(mode._SPECIAL, mode._call)  # a wrapper subclass moves its inner tensor
            subclasses.install(self._patches, mode.handle)  # as_subclass of a device tensor
            self._triton.install(self._patches)
            mode.enable_subclass_handler()
            self._threads.install()
        except BaseException:
            self.uninstall()
            raise

    def uninstall(self) -> None:
        self._threads.uninstall()
        mode.disable_subclass_handler()
        self._triton.uninstall()
        self._patches.undo()
        autocast.uninstall()
        devices.uninstall()
        graphs.uninstall()
        state.on_sync_hooks[:] = []
        state.S.recorder = None
        state.S.debug_mode = self._previous_debug_mode
        race.T.tensors.clear()
        race.T.copies.clear()
        with SimulatedCudaDetector._lock:
            SimulatedCudaDetector._installed = False

    def _patch_shallow_copy_check(self) -> None:
        """`module.to("cuda")` / `.cuda()` would move each parameter with `param.data = moved`,
        which swaps a plain CPU Parameter's data for a wrapper it cannot dispatch for. Saying the
        types are not shallow-copy compatible makes nn.Module build new Parameters around the
        simulated tensors instead (the path torch takes for any tensor subclass)."""
        original = torch._has_compatible_shallow_copy_type

        def compatible(a, b):
            if isinstance(a, _SimBase) != isinstance(b, _SimBase):
                return False
            return original(a, b)

        self._patches.set(torch, "_has_compatible_shallow_copy_type", compatible)

    def _patch_one_hot(self) -> None:
        """`F.one_hot` has no torch-function hook; note it as the API in progress so its sync
        (max().item() when num_classes is not given) is named as on a GPU."""
        original = _F.one_hot

        def one_hot(tensor, num_classes=-1):
            local = state.local
            previous = local.api, local.api_args
            local.api, local.api_args = one_hot, (tensor, num_classes)
            try:
                return original(tensor, num_classes)
            finally:
                local.api, local.api_args = previous

        one_hot.__name__ = "one_hot"
        state._API_NAMES[one_hot] = "torch.nn.functional.one_hot"
        self._patches.set(_F, "one_hot", one_hot)


def _import_dynamo_first() -> None:
    """torch imports torch._dynamo lazily, the first time a mode or a compiled function needs
    it (with a dispatch mode active, that is the first op). Its import builds tables from
    `torch.cuda`'s functions and must see the real ones, not ours: import it before patching."""
    try:
        import torch._dynamo  # noqa: F401
    except Exception:  # a broken dynamo must not stop the simulated device
        pass
