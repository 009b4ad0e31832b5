"""A parameter stored at an index under a tensor test on it is a tensor there (rules/_common.py
`python_arg`, analyzer.py `_proven`). SGLang 0.5.23's `MambaPool.set_mamba_ping_pong_slot`
stores `value` only `if torch.is_tensor(value):` and fills the slot otherwise; a caller passes
-1, which takes the other branch, so the store copies no Python number (0.5.22's unguarded form,
which the same caller made a blocking copy, is the rule's INVALID example). Small package: the
pool in one module, the per-step caller in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where

POOL = """
    import torch

    class Pool:
        def __init__(self, n, device):
            self.buf = torch.full((n,), -1, device=device)

        def set_slot(self, idx: int, value):
            if torch.is_tensor(value):
                self.buf[idx] = value
            else:
                self.buf[idx].fill_(-1)
"""

MODEL = """
    import torch
    from pkg.pool import Pool

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pool = Pool(8, "cuda")

        def forward(self, x: torch.Tensor, slots: torch.Tensor):
            self.pool.set_slot(0, -1)
            self.pool.set_slot(1, slots[0])
            return x
"""


def _stores(found):
    return [f for f in found if f[0] == "pkg/pool.py" and f[2] == "SYN404"]


def test_a_store_under_a_tensor_test_copies_no_number(tmp_path):
    # VALID: the guarded store, and the same with the test negated and the store in its `else`
    assert _stores(where(lint_package(tmp_path, {"pool.py": POOL, "model.py": MODEL}))) == []
    flipped = POOL.replace("if torch.is_tensor(value):", "if not isinstance(value, torch.Tensor):") \
        .replace("self.buf[idx] = value\n            else:\n                self.buf[idx].fill_(-1)",
                 "self.buf[idx].fill_(-1)\n            else:\n                self.buf[idx] = value")
    assert "else:\n                self.buf[idx] = value" in flipped
    assert _stores(where(lint_package(tmp_path, {"pool.py": flipped, "model.py": MODEL}))) == []


def test_a_store_the_test_does_not_guard_still_copies_the_number(tmp_path):
    # INVALID twins: no test (SGLang 0.5.22), the store in the branch where the value is no
    # tensor, and a store after the guarded block (the test holds only inside it)
    unguarded = POOL.replace("if torch.is_tensor(value):", "if True:")
    assert _stores(where(lint_package(tmp_path, {"pool.py": unguarded, "model.py": MODEL})))
    negated = POOL.replace("if torch.is_tensor(value):", "if not torch.is_tensor(value):")
    assert _stores(where(lint_package(tmp_path, {"pool.py": negated, "model.py": MODEL})))
    after = POOL.replace("                self.buf[idx].fill_(-1)\n",
                         "                self.buf[idx].fill_(-1)\n            self.buf[idx + 1] = value\n")
    found = _stores(where(lint_package(tmp_path, {"pool.py": after, "model.py": MODEL})))
    assert [f[1] for f in found] == [13], found
