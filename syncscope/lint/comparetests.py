"""Comparisons with a string that decide a branch on a CUDA GPU (branches.Conditions).

* A device-type test: `x.device.type == "cpu"`, `device != "cuda"`.
* A backend or implementation chosen by name, where the name is another platform's:
  `self.io_backend == "kernel_ascend"` (SGLang's cache controller: the NPU transfer kernels),
  `dsa_impl == "intel_xpu"`, `backend == "aiter_sparse"`. Whatever picks the value (a server
  argument, a config field), a CUDA deployment does not pick another platform's kernels, so
  the test is false there (and `!=` true). Words of the string, not substrings: `"input"` has
  no `npu`. `cpu` is left out on purpose: `offload_backend == "cpu"` is a host offload that a
  CUDA server does choose.
"""

from __future__ import annotations

import ast

from .library import LibraryFacts, words

_DEVICE_ENDS = (".type", "device", "device_type")


def compare_test(node: ast.Compare, left_name: str, library: LibraryFacts) -> tuple[bool | None, str]:
    """(value on a CUDA GPU, why) of `left == "literal"` / `!=`; (None, "") when undecided.
    `left_name` is the dotted name of the non-literal side ("" when it has none)."""
    if len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
        return None, ""
    left, right = node.left, node.comparators[0]
    if isinstance(left, ast.Constant):
        left, right = right, left
    if not (isinstance(right, ast.Constant) and isinstance(right.value, str)):
        return None, ""
    text = left_name.lower()
    if text.endswith(_DEVICE_ENDS):
        kind = right.value.split(":")[0]
        if kind == "cuda":
            value = True
        elif kind in library.other_words:
            value = False
        else:
            return None, ""
        why = f"device type `{right.value}`"
    else:
        hits = [w for w in words(right.value) if w in library.other_words and w != "cpu"]
        if not hits or not text:
            return None, ""
        value, why = False, f"`{left_name}` names another platform's backend (`{right.value}`)"
    if isinstance(node.ops[0], ast.NotEq):
        value = not value
    return value, why
