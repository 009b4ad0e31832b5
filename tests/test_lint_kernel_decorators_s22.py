"""A function is device code, skipped by both walks, only when its decorator's last name says so
(`jit`, `autotune`, `heuristics`, `kernel`, `*_jit`, `*_kernel`: vocabulary.decorator_kind). A
word inside the name is not enough: vLLM's `@kernel_launcher` and SGLang's `@debug_kernel_api` wrap
host launchers, whose syncs run every step; `@torch.jit.ignore` and `@torch.jit.script` are host
code; `@JitWarmupRegistry.capture` decorates vLLM's `GPUModelRunner.__init__`."""

from __future__ import annotations

import pytest

from syncscope.lint.vocabulary import decorator_kind
from test_lint_scope import lint_package, where

DECORATORS = """
    def kernel_launcher(fn):
        return fn

    def debug_kernel_api(fn):
        return fn
"""

OPS = """
    import torch
    import triton
    from pkg.decorators import debug_kernel_api, kernel_launcher

    @DECORATOR
    def launch(lengths: torch.Tensor):
        return int(lengths.max().item())
"""

MODEL = """
    import torch
    from pkg.ops import launch

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, lengths: torch.Tensor):
            return launch(lengths)
"""

SYNC = ("pkg/ops.py", 8, "SYN201")


def _run(tmp_path, decorator):
    return lint_package(tmp_path, {"decorators.py": DECORATORS, "ops.py": OPS.replace("DECORATOR", decorator),
                                   "model.py": MODEL})


@pytest.mark.parametrize("decorator", ["kernel_launcher", "debug_kernel_api"])
def test_a_host_launcher_named_with_kernel_is_walked(tmp_path, decorator):
    # VALID: the launcher's own `.item()` is found, per step through the module's forward
    assert SYNC in where(_run(tmp_path, decorator))


@pytest.mark.parametrize("name", ["torch.jit.script", "torch.jit.ignore", "JitWarmupRegistry.capture",
                                  "triton_op", "kernel_launcher", "debug_kernel_api"])
def test_host_decorators_are_no_kernels(name):
    assert decorator_kind(name) is None


@pytest.mark.parametrize("name", ["triton.jit", "triton.autotune", "triton.heuristics", "cute.kernel", "gluon.jit",
                                  "tilelang_jit", "register_kernel", "cached_triton_kernel", "helion.kernel", "njit"])
def test_kernel_decorators_are_kernels(name):
    # INVALID twin: device code stays skipped
    assert decorator_kind(name) == "kernel"


def test_a_device_kernel_is_still_skipped(tmp_path):
    # INVALID: the same body under `@triton.jit` is device code, never reported
    assert where(_run(tmp_path, "triton.jit")) == []
