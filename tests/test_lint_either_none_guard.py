"""A None-guard on several parameters at once (branches.py `_either_none`, callguards.py):
`if cu_blocks is None or max_block is None:` runs only when one of them is None, so a caller
that passes them all rules the block out, as it rules out `if p is None:` when it passes `p`.
SGLang 0.5.23's MiniMax sparse prefill (`flash_prefill_with_gqa_share_sparse`) recomputes its
query-block layout, with a `.item()` inside, only when the precomputed layout is missing, and
its one caller passes both parts. Small package: the kernel wrapper in one module, the per-step
caller in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where

KERNEL = """
    from typing import Optional
    import torch

    def blocks(cu_seqlens, n):
        lens = cu_seqlens[1:] - cu_seqlens[:-1]
        return lens, int(lens.max().item()), None

    def prefill(q: torch.Tensor, cu_seqlens: torch.Tensor, cu_blocks: Optional[torch.Tensor] = None,
                max_block: Optional[int] = None) -> torch.Tensor:
        if cu_blocks is None or max_block is None:
            cu_blocks, max_block, _ = blocks(cu_seqlens, 4)
        return q[:max_block]
"""

MODEL = """
    from typing import Optional
    import torch
    from pkg.kernel import blocks, prefill

    class Attn(torch.nn.Module):
        def forward(self, q: torch.Tensor, cu_seqlens: torch.Tensor, cu_blocks: Optional[torch.Tensor] = None,
                    max_block: Optional[int] = None):
            if cu_blocks is None or max_block is None:
                cu_blocks, max_block, _ = blocks(cu_seqlens, 4)
            return prefill(q, cu_seqlens, cu_blocks, max_block=max_block)
"""


def _kernel_calls(found):
    return [f for f in found if f[0] == "pkg/kernel.py" and f[2].startswith("SYN60")]


def test_every_caller_passes_every_guarded_parameter(tmp_path):
    # VALID: the caller passes both (one by place, one by name): the recomputation is cold, and
    # the caller's own recomputation (its parameters come from no caller) stays per step
    found = where(lint_package(tmp_path, {"kernel.py": KERNEL, "model.py": MODEL}))
    assert _kernel_calls(found) == [], found
    assert ("pkg/model.py", 10, "SYN601") in found, found


def test_a_caller_that_leaves_one_out_keeps_the_sync(tmp_path):
    # INVALID twins: the caller leaves out `max_block`, or passes a literal None for it; and a
    # guard joined by `and` is no `or` guard (`cu_blocks` passed alone decides nothing here)
    for call in ("prefill(q, cu_seqlens, cu_blocks)", "prefill(q, cu_seqlens, cu_blocks, max_block=None)"):
        model = MODEL.replace("prefill(q, cu_seqlens, cu_blocks, max_block=max_block)", call)
        assert call in model
        found = where(lint_package(tmp_path, {"kernel.py": KERNEL, "model.py": model}))
        assert _kernel_calls(found) == [("pkg/kernel.py", 12, "SYN601")], (call, found)
    either = KERNEL.replace("if cu_blocks is None or max_block is None:", "if cu_blocks is None or max_block < 0:")
    found = where(lint_package(tmp_path, {"kernel.py": either, "model.py": MODEL}))
    assert _kernel_calls(found) == [("pkg/kernel.py", 12, "SYN601")], found


def test_the_why_names_every_parameter(tmp_path):
    run = lint_package(tmp_path, {"kernel.py": KERNEL, "model.py": MODEL}, include_cold=True)
    [cold] = [f for f in run.findings if f.site.path == "pkg/kernel.py" and f.code == "SYN601"]
    assert cold.cold == "runs only when one of `cu_blocks`, `max_block` is None, and every caller passes them all"
