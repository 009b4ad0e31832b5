"""Helpers whose None says that an argument is no tensor.

    def _temperature_rows(temperature: float | Tensor, *, batch_size, device):
        if not isinstance(temperature, Tensor):
            return None
        ...
        return values, values.stride(0)

    temperature_rows = _temperature_rows(temperature, batch_size=b, device=d)
    if temperature_rows is None:
        scalar_temperature = float(temperature)   # a Python number here: no GPU read

(SGLang's UNO tree proposal.) The fact: a module-level function of the file whose first
statement is `if not isinstance(p, Tensor): return None` (or a bare `return`) on its parameter
`p`, that returns None nowhere else, and whose every other `return` is a tuple display (never
empty, so always true) and its last statement one of them, returns None exactly when `p` is no
tensor. So its result tests its argument as `isinstance(arg, Tensor)` does: where it is None (or
false) the argument is a Python value, as branch_merge.tensor_check already reads a local bound
to `isinstance(x, torch.Tensor)`.

Read from the file's `ast` (the walk's `file_tree`), once per file and only when a call of a
plain name is bound or tested; the table is kept on the tree object.
"""

from __future__ import annotations

import ast

from .nodewalk import own_nodes

_RETURN = frozenset({ast.Return})
_TABLE = "_syncscope_none_returns"  # the attribute the table is kept in on the file's tree


def none_param(tree, function: str) -> tuple[str, int] | None:
    """(the parameter, its position) whose being no tensor `function`'s None return says."""
    if tree is None:
        return None
    table = getattr(tree, _TABLE, None)
    if table is None:
        table = {stmt.name: found for stmt in tree.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and (found := _tests(stmt)) is not None}
        setattr(tree, _TABLE, table)
    return table.get(function)


def _is_none(node) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def _not_tensor(test) -> str | None:
    """`not isinstance(p, Tensor)` / `not isinstance(p, torch.Tensor)`: p."""
    if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)):
        return None
    call = test.operand
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "isinstance"
            and len(call.args) == 2 and not call.keywords and isinstance(call.args[0], ast.Name)):
        return None
    kind = call.args[1]
    name = kind.attr if isinstance(kind, ast.Attribute) else getattr(kind, "id", None)
    return call.args[0].id if name == "Tensor" else None


def _tests(function) -> tuple[str, int] | None:
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) < 2 or not isinstance(body[0], ast.If) or body[0].orelse or not isinstance(body[-1], ast.Return):
        return None
    first = body[0]
    param = _not_tensor(first.test)
    if param is None or len(first.body) != 1 or not isinstance(first.body[0], ast.Return) \
            or not _is_none(first.body[0].value):
        return None
    for found in own_nodes(body[1:], _RETURN, enter_block_definitions=False):  # not a nested def's
        if not (isinstance(found.value, ast.Tuple) and found.value.elts
                and not any(isinstance(e, ast.Starred) for e in found.value.elts)):
            return None
    args = function.args
    positional = [a.arg for a in (*args.posonlyargs, *args.args)]
    if param in positional:
        return param, positional.index(param)
    return (param, -1) if param in [a.arg for a in args.kwonlyargs] else None
