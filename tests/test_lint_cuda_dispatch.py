"""A kernel that dispatches on where its inputs live (cuda_dispatch.py): after `if
inputs_on_cuda(...): return triton(...)`, the torch reference runs only for host inputs, so its
`.item()` never waits for a GPU. SGLang 0.5.23's DSpark `BlockwiseRejection.execute` routes this
way through `inputs_on_cuda` (`return value.is_cuda` of the first tensor, else `raise`), a helper
in another module. Small package: the helper, the kernel and the per-step caller each in their
own module."""

from __future__ import annotations

from test_lint_scope import lint_package, where

DISPATCH = """
    import torch

    def inputs_on_cuda(*args, **kwargs) -> bool:
        for value in (*args, *kwargs.values()):
            if isinstance(value, torch.Tensor):
                return value.is_cuda
        raise AssertionError("kernel dispatch requires at least one tensor argument")
"""

KERNEL = """
    import torch
    from pkg.dispatch import inputs_on_cuda

    class Rejection:
        @classmethod
        def execute(cls, *args, **kwargs) -> torch.Tensor:
            if inputs_on_cuda(*args, **kwargs):
                return rej_triton(*args, **kwargs)
            return rej_torch(*args, **kwargs)

    def rej_triton(*, candidates: torch.Tensor, counter: torch.Tensor) -> torch.Tensor:
        return candidates + 1

    def rej_torch(*, candidates: torch.Tensor, counter: torch.Tensor) -> torch.Tensor:
        n = int(counter.item())
        return candidates[:n]
"""

MODEL = """
    import torch
    from pkg.kernel import Rejection

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, c: torch.Tensor):
            return Rejection.execute(candidates=x, counter=c)
"""


def _lint(tmp_path, dispatch=DISPATCH, kernel=KERNEL, **overrides):
    return where(lint_package(tmp_path, {"dispatch.py": dispatch, "kernel.py": kernel, "model.py": MODEL}, **overrides))


def test_the_reference_after_a_dispatch_on_cuda_never_syncs(tmp_path):
    # VALID: the early return, the `else` arm, and `if not inputs_on_cuda(...):` around the reference
    assert _lint(tmp_path) == []
    with_else = KERNEL.replace("                return rej_triton(*args, **kwargs)\n            return rej_torch",
                               "                return rej_triton(*args, **kwargs)\n            else:\n                return rej_torch")
    assert "else:" in with_else
    assert _lint(tmp_path, kernel=with_else) == []
    negated = KERNEL.replace("if inputs_on_cuda(*args, **kwargs):\n                return rej_triton(*args, **kwargs)\n"
                             "            return rej_torch(*args, **kwargs)",
                             "if not inputs_on_cuda(*args, **kwargs):\n                return rej_torch(*args, **kwargs)\n"
                             "            return rej_triton(*args, **kwargs)")
    assert "if not inputs_on_cuda" in negated
    assert _lint(tmp_path, kernel=negated) == []


def test_a_helper_that_may_say_otherwise_decides_nothing(tmp_path):
    # INVALID twins: a helper that also returns a switch, one that may end without a return
    # (None: the reference runs), one that compares `device.type` (not read here), a coroutine
    # function (its call is a coroutine, always true), and a test that is more than the call
    synced = [("pkg/kernel.py", 10, "SYN601"), ("pkg/kernel.py", 16, "SYN201")]
    for dispatch in (DISPATCH.replace("return value.is_cuda", "return value.is_cuda or FORCE_TRITON"),
                     DISPATCH.replace('        raise AssertionError("kernel dispatch requires at least one tensor argument")\n', ""),
                     DISPATCH.replace("return value.is_cuda", "return value.device.type == 'cuda'"),
                     DISPATCH.replace("def inputs_on_cuda", "async def inputs_on_cuda")):
        assert dispatch != DISPATCH
        assert _lint(tmp_path, dispatch=dispatch) == synced, dispatch
    both = KERNEL.replace("if inputs_on_cuda(*args, **kwargs):", "if inputs_on_cuda(*args, **kwargs) and USE_TRITON:")
    assert _lint(tmp_path, kernel=both) == synced


def test_the_why_names_the_dispatcher(tmp_path):
    run = lint_package(tmp_path, {"dispatch.py": DISPATCH, "kernel.py": KERNEL, "model.py": MODEL}, include_cold=True)
    [call] = [f for f in run.findings if f.site.path == "pkg/kernel.py" and f.code == "SYN601"]
    assert call.cold == "never on CUDA: `inputs_on_cuda` tells whether the inputs are on the GPU, and this runs only when they are not"
