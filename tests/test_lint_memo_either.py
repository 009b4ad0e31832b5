"""A memo filled on a miss of either of two caches (memo.py `_missing`): Cosmos3's multiview DiT
builds a request's caption K/V and RoPE positions when `cache_key not in self.cached_kv or
cache_key not in self.cached_gen_rope_inputs`, on the first denoising step of a request only.
Small package: the module in one file, the helper that syncs in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where

HELPERS = """
    import torch

    def position_ids(n: int, device) -> torch.Tensor:
        ids = torch.arange(n, device=device)
        top = int(ids.max().item())
        return ids[: top + 1]
"""

MODEL = """
    import torch
    from pkg.helpers import position_ids

    class MultiviewDiT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cached_kv = {}
            self.cached_rope = {}

        def forward(self, x: torch.Tensor, cache_key: str, n: int):
            if cache_key not in self.cached_kv or cache_key not in self.cached_rope:
                self.cached_kv[cache_key] = x * 2
                self.cached_rope[cache_key] = position_ids(n, x.device)
            return x + self.cached_kv[cache_key]
"""


def test_a_fill_on_a_miss_of_either_memo_runs_once_per_key(tmp_path):
    # VALID: the helper's readback runs only when a memo of the module misses
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": MODEL})
    assert where(run) == [], where(run)


def test_a_fill_that_also_tests_something_else_stays_per_step(tmp_path):
    # INVALID twin: `or n != self.n` may hold every step: no memo
    source = MODEL.replace("or cache_key not in self.cached_rope:", "or n != self.n:")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert ("pkg/model.py", 13, "SYN602") in where(run) or ("pkg/helpers.py", 6, "SYN201") in where(run), where(run)
