"""Compute-capability and package-availability tests that hold on the GPUs serving runs on (branches.Conditions).

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


def available_test(split: list[str], packages: frozenset) -> str | None:
    """The package a name tests the availability of (`HAS_TRITON`, `has_triton`, `support_triton`,
    `supports_triton`, `is_triton_available`, `triton_available`, `triton_is_available`), when a
    CUDA install always has it (library.py `available-on-cuda`). Not `is_triton` (a backend
    choice) nor `has_triton_kernels` (another package)."""
    if len(split) == 2 and split[0] in ("has", "support", "supports") and split[1] in packages:
        return split[1]
    if split[-1:] == ["available"] and split[:-1] in (["is", p] for p in packages) or \
            split[:1] and split[0] in packages and split[1:] in (["available"], ["is", "available"]):
        return next(w for w in split if w in packages)
    return None
