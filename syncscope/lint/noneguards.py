"""None-guards on parameters: the lines of a function that run only when a parameter is None.

    def prepare(x, chunk_indices=None):
        if chunk_indices is None:                  # runs only for callers that leave it out
            chunk_indices = build(x)               # (a `.tolist()` inside)
        if cu_blocks is None or max_block is None:  # only for callers that leave one of them out
            cu_blocks, max_block = blocks(x)

Read per file here (branches.py records them); callguards.py decides them over the whole tree:
a block whose parameters every caller passes never runs while serving. A required parameter
typed `Optional[X]` (`nullable`) is no such guard: its callers pass None.
"""

from __future__ import annotations

import ast

from .lines import last_line

EITHER = " or "  # joins the parameters of a guard `if p is None or q is None:`


def none_guard(stmt: ast.If, params, nullable) -> tuple[int, int, str] | None:
    """(start, end, parameter) of the lines `stmt` runs only when a parameter of its function
    is None; for `p is None or q is None`, the parameters joined by EITHER, every one of which a
    caller must pass to rule the block out. `if p is None:` and `if p is None and q is not
    None:` guard their body; `if p is not None: ... else:` its `else`."""
    test = stmt.test
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        either = [_none_test(part, params, nullable, ast.Is) for part in test.values]
        if all(either):
            return (stmt.body[0].lineno, last_line(stmt.body[-1]), EITHER.join(either))
        return None
    tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in tests:
        param = _none_test(part, params, nullable, (ast.Is, ast.IsNot))
        if param is None:
            continue
        negated = isinstance(part.ops[0], ast.IsNot)
        if negated and len(tests) > 1:
            continue  # `p is not None and q`: its `else` runs for other reasons too
        body = stmt.orelse if negated else stmt.body
        return (body[0].lineno, last_line(body[-1]), param) if body else None
    return None


def _none_test(part, params, nullable, op) -> str | None:
    """The parameter `part` tests with `op` (a comparison type, or a tuple of them) against None
    (`p is None`), one a caller may pass."""
    if not (isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], op)
            and isinstance(part.left, ast.Name) and isinstance(part.comparators[0], ast.Constant)
            and part.comparators[0].value is None):
        return None
    param = part.left.id
    if param not in params or param in ("self", "cls") or param in nullable:
        return None
    return param

