"""Tests on where a tensor lives, read as a fact about each arm of an `if` (issue 24, "host data
taken for device data").

    if not prev_token_ids.is_cpu:
        prev_token_ids = prev_token_ids.cpu()
    self.prev_token_ids = prev_token_ids.tolist()    # host data on both paths: no sync here

The arm that moves the value to the host makes it host data; the other arm is taken only where
the test says the value already is on the host. So after the `if`, the name is host data on both
paths, and the `.tolist()` reads host memory (the sync, if any, is the `.cpu()` in the arm).

The facts, each about code: where `x.is_cpu` is true, or `x.device.type == "cpu"`, or
`x.is_cuda` is false, or `x.device.type == "cuda"` is false, `x` is not on the GPU (a tensor off
CUDA cannot make the host wait for a CUDA GPU). `not` swaps the arms. Only the name the test
reads is narrowed, in the arm where the test says so; another name the arm moves too
(`prev_accept_lens = prev_accept_lens.cpu()` under a test of `prev_token_ids`) is left as the
code states it: unknown on the other path.
"""

from __future__ import annotations

import libcst as cst

from .imports import dotted

# the attribute test, and whether it being true puts the tensor on the host
_FLAGS = {"is_cpu": True, "is_cuda": False}
# `x.device.type == <literal>`: whether equality puts the tensor on the host
_TYPES = {"cpu": True, "cuda": False}


def host_test(test: cst.BaseExpression) -> tuple[str | None, bool]:
    """The name whose place `test` states and whether the test being TRUE puts it on the host
    (False: the test being false does); (None, False) for any other test."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        name, host_if_true = host_test(test.expression)
        return name, not host_if_true
    if isinstance(test, cst.Attribute) and test.attr.value in _FLAGS:
        return dotted(test.value), _FLAGS[test.attr.value]
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        equal = isinstance(target.operator, cst.Equal)
        if not equal and not isinstance(target.operator, cst.NotEqual):
            return None, False
        left, right = test.left, target.comparator
        if isinstance(left, cst.SimpleString):
            left, right = right, left
        kind = right.evaluated_value if isinstance(right, cst.SimpleString) else None
        if kind not in _TYPES or not isinstance(left, cst.Attribute) or left.attr.value != "type":
            return None, False
        device = left.value
        if not isinstance(device, cst.Attribute) or device.attr.value != "device":
            return None, False
        return dotted(device.value), _TYPES[kind] == equal
    return None, False
