"""None-guards written as a conditional expression: `cpu if cpu is not None else t.cpu()`.

branches.py records `if p is None:` blocks on a parameter that defaults to None, and
reachability.guarded_lines makes them cold when every call in the tree passes the parameter.
The same fallback is often one expression. SGLang's speculative `filter_batch`:

    host_indices = (
        new_indices_cpu if new_indices_cpu is not None else new_indices.cpu()
    )

and its only caller passes `new_indices_cpu=keep_indices`. Lines are the unit of coldness, so
the fallback's lines are a guard only where nothing else on them can sync: the statement is an
assignment to plain names or a `return` whose whole value is the expression, the other arm is
a name, a constant or an attribute of a name (no call, no indexing), and no other statement
shares the fallback's lines.
"""

from __future__ import annotations

import ast


def _plain(node) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, (ast.Name, ast.Constant))


def ifexp_guard(stmt, params, nullable, before: int, after: int) -> tuple[int, int, str] | None:
    """(first line, last line, parameter) of the arm of `stmt`'s conditional expression that
    runs only when a parameter is None, or None. `before` / `after`: the last line of the
    statement before it and the first of the one after it in the block (0 / a large number
    when none)."""
    if isinstance(stmt, ast.Assign):
        if not all(isinstance(t, ast.Name) for t in stmt.targets):
            return None
    elif isinstance(stmt, ast.AnnAssign):
        if not isinstance(stmt.target, ast.Name):
            return None
    elif not isinstance(stmt, ast.Return):
        return None
    value = stmt.value
    if not isinstance(value, ast.IfExp):
        return None
    test = value.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and isinstance(test.ops[0], (ast.Is, ast.IsNot)) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None):
        return None
    param = test.left.id
    if param not in params or param in ("self", "cls") or param in nullable:
        return None
    guarded, other = (value.body, value.orelse) if isinstance(test.ops[0], ast.Is) else (value.orelse, value.body)
    if not _plain(other):
        return None
    start, end = guarded.lineno, getattr(guarded, "end_lineno", None) or guarded.lineno
    if start <= before or end >= after:
        return None
    return start, end, param
