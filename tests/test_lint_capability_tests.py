"""A compute-capability test every GPU serving runs on passes is true (capability_tests.py):
vLLM 0.33.0's `persistent_masked_m_silu_mul_quant` runs its C++ kernel under `if
current_platform.is_cuda() and current_platform.has_device_capability(80):` and reads each
expert's token count with `.item()` only in the `else`, the Triton fallback for ROCm and XPU.
Small package: the kernel wrapper in one module, the per-step caller in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where
from test_lint_scope_once import cold_reasons

PLATFORMS = """
    class _Platform:
        def is_cuda(self) -> bool:
            return True

        def has_device_capability(self, capability) -> bool:
            return True

    current_platform = _Platform()
"""

KERNEL = """
    import torch
    from pkg.platforms import current_platform

    def silu_mul_quant(y: torch.Tensor, tokens_per_expert: torch.Tensor) -> torch.Tensor:
        if current_platform.is_cuda() and current_platform.has_device_capability(80):
            torch.ops._C.silu_mul_quant(y, tokens_per_expert)
        else:
            for e in range(y.shape[0]):
                count = tokens_per_expert[e].item()
                y[e, :count] *= 2
        return y
"""

MODEL = """
    import torch
    from torch import nn
    from pkg.kernel import silu_mul_quant

    class Experts(nn.Module):
        def forward(self, y: torch.Tensor, tokens_per_expert: torch.Tensor):
            return silu_mul_quant(y, tokens_per_expert)
"""


def _files(kernel=KERNEL):
    return {"platforms.py": PLATFORMS, "kernel.py": kernel, "model.py": MODEL}


def test_a_fallback_for_gpus_older_than_ampere_is_no_step_sync(tmp_path):
    # VALID, with the capability written as a number and as a (major, minor) pair
    for kernel in (KERNEL, KERNEL.replace("has_device_capability(80)", "has_device_capability((7, 5))")):
        assert where(lint_package(tmp_path, _files(kernel))) == [], kernel
    # cold on CUDA (an `and` of true tests gives its first part's reason)
    cold = cold_reasons(lint_package(tmp_path, _files(), include_cold=True))
    assert "true on CUDA" in cold[("pkg/kernel.py", 10)], cold


def test_a_newer_or_unknown_capability_keeps_the_sync(tmp_path):
    # INVALID twins: Hopper-only (sm90 is not every serving GPU), a capability from a variable
    for before, after in (("has_device_capability(80)", "has_device_capability(90)"),
                          ("has_device_capability(80)", "has_device_capability(self_cap)")):
        kernel = KERNEL.replace(before, after).replace("tokens_per_expert: torch.Tensor) -> torch.Tensor:",
                                                       "tokens_per_expert: torch.Tensor, self_cap=80) -> torch.Tensor:")
        assert kernel != KERNEL
        found = where(lint_package(tmp_path, _files(kernel)))
        assert ("pkg/kernel.py", 10, "SYN201") in found, (after, found)
