"""Compute-capability tests that hold on the GPUs serving runs on (branches.Conditions).

vLLM picks its C++ kernel with `if current_platform.is_cuda() and
current_platform.has_device_capability(80):` and leaves `else:` to "the Triton fallback for ROCm and
XPU" (`batched_deep_gemm_moe.persistent_masked_m_silu_mul_quant`, whose fallback reads each
expert's token count with `.item()`). The per-step reading assumes a GPU serving engines target
today, Ampere or newer (sm80+: A100, H100/H200, B200), so a test of at most that capability is
true, and its `else` never runs on CUDA. Library facts `[platform] capability-tests` say which
calls and up to which capability (`has_device_capability<=80`); a literal `80` or `(8, 0)` is read,
anything else (a variable, `(90)`: Hopper-only code is per step on a Hopper) stays unknown.
"""

from __future__ import annotations

import ast


def capability_test(call: ast.Call, name: str, tests) -> tuple[bool, str] | None:
    """(True, why) when `call` (named `name`) tests a capability every serving GPU has, else None."""
    last = name.rsplit(".", 1)[-1]
    for entry in tests:
        function, _, most = entry.partition("<=")
        if function != last or not most.isdigit() or len(call.args) != 1 or call.keywords:
            continue
        asked = _capability(call.args[0])
        if asked is not None and asked <= int(most):
            return True, f"`{name}({asked})`: every GPU serving runs on (sm{most}+) has it"
    return None


def _capability(node) -> int | None:
    """`80` -> 80, `(8, 0)` -> 80; None for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Tuple) and len(node.elts) == 2 and all(
            isinstance(e, ast.Constant) and type(e.value) is int for e in node.elts):
        return node.elts[0].value * 10 + node.elts[1].value
    return None
