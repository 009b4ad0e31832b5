"""Shapes of small pieces of syntax the rules' walk reads (libcst): an `isinstance` test on plain
Python types, the names a `for` target binds."""

from __future__ import annotations

import libcst as cst

from .imports import dotted


# Python types an `isinstance` test can name: a value that passes it is no tensor.
_PLAIN_TYPES = frozenset("list tuple int float bool str dict set".split())


def plain_type_check(test: cst.BaseExpression) -> tuple[str | None, bool]:
    """`isinstance(x, list)` / `isinstance(x, (int, float))` (or its `not`): the name tested and
    whether the test is negated; None where the types are not all plain Python ones."""
    negated = isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    call = test.expression if negated else test
    if not isinstance(call, cst.Call) or dotted(call.func) != "isinstance" or len(call.args) != 2:
        return None, False
    kinds = call.args[1].value
    names = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
    if not names or not all(isinstance(n, cst.Name) and n.value in _PLAIN_TYPES for n in names):
        return None, False
    return dotted(call.args[0].value), negated


def target_names(target: cst.BaseExpression) -> list[str]:
    """The plain names a `for` target binds (`t, (h, w)`: t, h, w)."""
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def plain_string(node: cst.BaseExpression | None) -> str | None:
    """The value of a plain string literal (no f-string, no concatenation), else None."""
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None
