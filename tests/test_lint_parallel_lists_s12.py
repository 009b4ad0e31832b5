"""A parallel assignment of displays, session 12 (from branch `n-cuda3`; its other rules, the
CUDA dispatchers and switches only another platform sets, were not merged: see docs/lint.md).

A parallel assignment of displays (`prefix_lens, positions = [], []`, then `.append(...)` in a
loop) binds each name to a list, as Python does: `if not positions:` asks the list for its length
(SGLang's FlashInfer multi-item scoring). sequence_names.py.
Each VALID package leaves the line out of the default report; each INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

# -- 1. parallel assignment of displays -----------------------------------------------------

OPS = """
    import torch

    def scoring(x: torch.Tensor, lens: list):
        prefix, parts = [], []
        for n in lens:
            prefix.append(n)
            parts.append(x[:n].to(torch.int16))
        if parts:
            parts = [torch.cat([t, t[:1]]) for t in parts]
        if not prefix or not parts:
            return None
        return torch.cat(parts)
"""

MODEL = """
    import torch
    from pkg.ops import scoring

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            y = torch.ones(4, 8, device="cuda")
            return scoring(y, [1, 2])
"""

TEST_LINE = 11  # `if not prefix or not parts:`


def test_a_parallel_assignment_of_lists_binds_each_name_to_a_list(tmp_path):
    run = lint_package(tmp_path, {"ops.py": OPS, "model.py": MODEL})
    assert TEST_LINE not in lines(run)
    assert lines(run, "pkg/model.py") == []


def test_a_parallel_assignment_of_a_tensor_is_still_tested(tmp_path):
    ops = OPS.replace("prefix, parts = [], []", "prefix, parts = [], x[:1]")
    run = lint_package(tmp_path, {"ops.py": ops, "model.py": MODEL})
    assert TEST_LINE in lines(run)


def test_an_unpacking_of_a_call_is_still_tested(tmp_path):
    ops = OPS.replace("prefix, parts = [], []", "prefix, parts = [], []\n        prefix, parts = x.sum(), x[0]")
    run = lint_package(tmp_path, {"ops.py": ops, "model.py": MODEL})
    assert TEST_LINE + 1 in lines(run)
