"""Set-up kept on a module that a function is handed: lines that run once per module.

    def ensure_wrapper(layer: torch.nn.Module) -> None:
        if layer._wrapper is not None:     # every later call returns here
            return
        scales = resolve_scales(layer)     # runs once per layer
        layer._wrapper = Wrapper(scales)

The same annotations tell branches.py's module-level cache fills keyed by a module's identity
(`_CACHE[id(layer)]`, `_CACHE[id(layers[0])]` for `layers: list[nn.Module]`) from ones keyed by
a tensor's: the module's identity is the same every step.

memo.py decides such fills on `self`, whose owner's class says how long it lives. Here the
object is a parameter, and its annotation says it: a parameter declared as an `nn.Module`
(library facts `[roots] module-types`) is a module of the model, built with it at start-up and
kept across steps, so what the function stores on it survives to the next call. A parameter
declared otherwise, or not at all, may be a per-step object (a batch, its metadata), refilled
every step: no such memo. Plain tuples only: the result is pickled into the lint cache.
"""

from __future__ import annotations

import ast
import fnmatch

from .ast_annotations import dotted
from .lines import last_line
from .nodewalk import every_node

PARAM = "<param>"  # in place of the filling method: a field of a module parameter (memo_lines)


def module_params(function, aliases: dict, module_types: tuple, containers: bool = False) -> frozenset:
    """The parameters of `function` annotated with a module type (`layer: torch.nn.Module`,
    `layer: nn.Module` after `from torch import nn`); with `containers`, those annotated as a
    list, sequence or tuple of modules instead (`layers: list[nn.Module]`)."""
    if not module_types:
        return frozenset()
    args = function.args
    found = set()
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        annotation = arg.annotation
        if containers:
            annotation = _item_annotation(annotation)
        name = dotted(annotation) if annotation is not None else None
        if name is None or arg.arg in ("self", "cls"):
            continue
        head, _, rest = name.partition(".")
        full = aliases.get(head, head) + (f".{rest}" if rest else "")
        if any(fnmatch.fnmatchcase(full, pattern) for pattern in module_types):
            found.add(arg.arg)
    return frozenset(found)


_CONTAINERS = frozenset("list List Sequence tuple Tuple".split())


def _item_annotation(node):
    """`list[X]`, `Sequence[X]`, `tuple[X, ...]` -> X; else None."""
    if not (isinstance(node, ast.Subscript) and (dotted(node.value) or "").rsplit(".", 1)[-1] in _CONTAINERS):
        return None
    inner = node.slice
    if isinstance(inner, ast.Tuple):
        if len(inner.elts) != 2 or not (isinstance(inner.elts[1], ast.Constant) and inner.elts[1].value is Ellipsis):
            return None
        inner = inner.elts[0]
    return inner


def _param_field(node, params: frozenset) -> str | None:
    """`layer._wrapper` or `getattr(layer, "_wrapper", None)` of a module parameter: "layer._wrapper"."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in params:
        return f"{node.value.id}.{node.attr}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id in params \
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        return f"{node.args[0].id}.{node.args[1].value}"
    return None


def _stores(body, field: str) -> bool:
    """The statements store `layer._wrapper` (`layer._wrapper = v`, `setattr(layer, "_wrapper", v)`)."""
    for node in every_node(ast.Module(body=list(body), type_ignores=[])):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                   and f"{t.value.id}.{t.attr}" == field for t in targets):
                return True
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and len(node.args) == 3 and isinstance(node.args[0], ast.Name) \
                and isinstance(node.args[1], ast.Constant) and f"{node.args[0].id}.{node.args[1].value}" == field:
            return True
    return False


def param_memo(function, params: frozenset) -> tuple | None:
    """(start, end, field, PARAM): the rest of `function`'s body after a top-level `if
    layer._wrapper is not None: return` when that rest stores `layer._wrapper`, `layer` a module
    parameter; else None. Only a plain `is not None` test: `if layer.w is not None and bs ==
    layer.bs:` may fail every step."""
    if not params:
        return None
    body = function.body
    for index, stmt in enumerate(body):
        if not isinstance(stmt, ast.If):
            continue
        test = stmt.test
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot)
                and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
            continue
        field = _param_field(test.left, params)
        rest = body[index + 1:]
        if field is None or stmt.orelse or not rest or not isinstance(stmt.body[-1], ast.Return):
            continue
        if _stores(rest, field):
            return (rest[0].lineno, last_line(rest[-1]), field, PARAM)
    return None

