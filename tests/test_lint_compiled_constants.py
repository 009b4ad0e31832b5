"""Constants that `torch.compile` bakes into the graph (syncscope/lint/compiled.py): SGLang's
`FP4MXBlock16KVQuantizeUtil.batched_quantize` builds `tensor.new_tensor(E2M1_BOUNDS)` inside a
`@torch.compile`d function; inductor folds it, so no copy per call, and the memory pools that
call it every step are not told it syncs. Small package: the quantizer in one module, the pool
that calls it in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where

QUANT = """
    import torch

    E2M1_BOUNDS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)

    class QuantizeUtil:
        @staticmethod
        @torch.compile
        def batched_quantize(tensor: torch.Tensor):
            bounds = tensor.new_tensor(E2M1_BOUNDS, dtype=torch.float32)
            return torch.sum(tensor.abs().unsqueeze(-1) >= bounds, dim=-1)
"""

POOL = """
    import torch
    from pkg.quant import QuantizeUtil

    class KVPool(torch.nn.Module):
        def forward(self, cache_k: torch.Tensor):
            return QuantizeUtil.batched_quantize(cache_k)
"""


def test_a_constant_in_a_compiled_function_is_no_copy_for_its_callers(tmp_path):
    # VALID: neither the quantizer's line nor the pool's call
    assert where(lint_package(tmp_path, {"quant.py": QUANT, "pool.py": POOL})) == []


def test_the_same_constant_eager_or_rebound_still_copies(tmp_path):
    # INVALID twins: without `torch.compile` (the line moves up one), and with a name the
    # module binds twice
    eager = QUANT.replace("        @torch.compile\n", "")
    found = where(lint_package(tmp_path, {"quant.py": eager, "pool.py": POOL}))
    assert ("pkg/quant.py", 9, "SYN402") in found and ("pkg/pool.py", 7, "SYN602") in found, found
    rebound = QUANT.replace("class QuantizeUtil:", "E2M1_BOUNDS = (0.5, 1.0)\n\n    class QuantizeUtil:")
    found = where(lint_package(tmp_path, {"quant.py": rebound, "pool.py": POOL}))
    assert any(f[0] == "pkg/quant.py" and f[2] == "SYN402" for f in found), found


DEQUANT = """
    import torch

    E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)

    class QuantizeUtil:
        @staticmethod
        @torch.compile
        def batched_dequantize(tensor: torch.Tensor, n: int):
            values = tensor.new_tensor(E2M1_VALUES[:8], dtype=torch.float32)
            return values[tensor.long()]
"""

DEQUANT_POOL = POOL.replace("batched_quantize(cache_k)", "batched_dequantize(cache_k, 8)")


def test_a_literal_slice_of_a_constant_is_a_constant(tmp_path):
    # VALID: SGLang's `batched_dequantize`, `tensor.new_tensor(E2M1_VALUES[:8])` (checked on an
    # H200 by a session-28 reader: no host-to-device copy once compiled); so are `[0]`, `[2:-1]`
    for part in ("[:8]", "[0]", "[2:-1]", "[::2]"):
        source = DEQUANT.replace("E2M1_VALUES[:8]", f"E2M1_VALUES{part}")
        assert where(lint_package(tmp_path, {"quant.py": source, "pool.py": DEQUANT_POOL})) == [], part


def test_a_slice_of_a_constant_with_a_bound_known_at_run_time_still_copies(tmp_path):
    # INVALID twins: the bound is a parameter (dynamo guards on it: a new value recompiles or
    # copies), and the same slice without `torch.compile`
    found = where(lint_package(tmp_path, {"quant.py": DEQUANT.replace("[:8]", "[:n]"), "pool.py": DEQUANT_POOL}))
    assert any(f[0] == "pkg/quant.py" and f[2] == "SYN402" for f in found), found
    eager = DEQUANT.replace("        @torch.compile\n", "")
    found = where(lint_package(tmp_path, {"quant.py": eager, "pool.py": DEQUANT_POOL}))
    assert any(f[0] == "pkg/quant.py" and f[2] == "SYN402" for f in found), found
