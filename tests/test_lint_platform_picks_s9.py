"""A base-class method that the CUDA platform's pick overrides never runs on CUDA (session 9).

vLLM's `current_platform.get_punica_wrapper()` returns a class path string; the CUDA platform's
(`PunicaWrapperGPU`) overrides `update_metadata` without calling the base's, so the base's
`_update_prefill_metadata` -> `compute_meta` (`.item()`) runs only on the CPU platform. Each
VALID package has an INVALID twin that stays reported.
"""

from __future__ import annotations

from test_lint_host_facts import lint_package, where

PLATFORMS = """
class Platform:
    @classmethod
    def get_wrapper(cls) -> str:
        raise NotImplementedError

class CudaPlatformBase(Platform):
    @classmethod
    def get_wrapper(cls) -> str:
        return "pkg.wrappers.WrapperGPU"

class CpuPlatform(Platform):
    @classmethod
    def get_wrapper(cls) -> str:
        return "pkg.wrappers.WrapperCPU"

current_platform = CudaPlatformBase()
"""

WRAPPERS = """
import torch

def compute_meta(t: torch.Tensor) -> int:
    return t.max().item()

class WrapperBase:
    def __init__(self, device):
        self.indices = torch.zeros(8, device=device)

    def update_metadata(self, mapping):
        self.size = compute_meta(self.indices)

class WrapperGPU(WrapperBase):
    def update_metadata(self, mapping):
        GPU_BODY

class WrapperCPU(WrapperBase):
    pass
EXTRA
"""

MANAGER = """
import torch
from pkg.platforms import current_platform
from pkg.wrappers import WrapperBase

def resolve(name: str):
    return name

def get_wrapper(device) -> WrapperBase:
    return resolve(current_platform.get_wrapper())(device)

class Runner(torch.nn.Module):
    def __init__(self, device):
        super().__init__()
        self.wrapper: WrapperBase = get_wrapper(device)

    def forward(self, x: torch.Tensor, mapping):
        self.wrapper.update_metadata(mapping)
        return x
"""


def findings(tmp_path, gpu_body: str = "self.mapping = mapping", extra: str = "", platforms: str = PLATFORMS):
    wrappers = WRAPPERS.replace("GPU_BODY", gpu_body).replace("EXTRA", extra)
    run = lint_package(tmp_path, {"platforms.py": platforms, "wrappers.py": wrappers, "manager.py": MANAGER})
    return [(path, line) for path, line, _ in where(run) if path.endswith("wrappers.py")]


def test_a_base_method_the_cuda_pick_overrides_is_not_per_step(tmp_path):
    # VALID: on CUDA the wrapper is WrapperGPU, whose update_metadata never calls the base's
    assert findings(tmp_path) == []


def test_a_cuda_pick_that_calls_the_base_method_keeps_it(tmp_path):
    # INVALID twin: the override calls super().update_metadata: the base's body runs on CUDA
    assert findings(tmp_path, "super().update_metadata(mapping)")


def test_a_subclass_no_platform_picks_keeps_the_base_method(tmp_path):
    # INVALID twin: a class below the base that no platform names may be built directly
    assert findings(tmp_path, extra="\nclass WrapperLocal(WrapperBase):\n    pass\n")


def test_a_default_pick_the_cuda_platform_inherits_keeps_the_base_method(tmp_path):
    # INVALID twin: the interface's other method returns WrapperCPU, and the CUDA platform keeps
    # that default: WrapperCPU (which runs the base's body) is a CUDA pick as well
    platforms = PLATFORMS.replace("        raise NotImplementedError\n",
                                  "        raise NotImplementedError\n\n    @classmethod\n"
                                  "    def get_fallback(cls) -> str:\n        return \"pkg.wrappers.WrapperCPU\"\n", 1)
    assert findings(tmp_path, platforms=platforms)
