"""Memoized functions keyed by Python values: what they call runs on a miss only, for memo.py.

    @functools.lru_cache(maxsize=8)
    def _varlen_meta(seq_lens: tuple[int, ...], max_len: int, device: torch.device) -> dict:
        return build_meta_from_ranges(...)        # a blocking upload inside, once per key

The analyzer already drops the syncs written in such a body (a memo of configuration values,
analyzer.visit_function); the calls it makes still counted for its callers, so every per-step
call site of `_varlen_meta` was told it syncs. Here the body's lines are a memo fill: a call in
them does not count for the function's callers, as a sync written there does not.

Which keys: every parameter (but `self`/`cls`) is declared a Python value, by an annotation
made only of Python value types (`int`, `tuple[int, ...]`, `str | None`, `torch.device`,
`torch.dtype`) or a module-level alias of one (`Segment = int | tuple[int, int]`). A memo with
a tensor in its key (`t: torch.Tensor`, hashed by identity: a new tensor every step misses), an
unannotated parameter (it may be handed one), `*args`/`**kwargs`, or one that keys by `id()` of
a parameter is left as it was: its body may run every step. `@cached_property` is memo.py's
(once per object, whose lifetime decides).
"""

from __future__ import annotations

import ast

from .ast_annotations import dotted
from .nodewalk import every_node

MEMOIZED = "<memoized>"  # in place of the filling method: the body of a memoized function (memo_lines)

# the last names an annotation of a Python value is made of (containers of them, unions, devices)
_VALUE_NAMES = frozenset(
    "int float bool complex str bytes tuple Tuple frozenset FrozenSet Optional Union Literal "
    "device dtype".split())


def module_aliases(tree: ast.Module) -> dict:
    """Module-level `Name = <annotation>` bindings (type aliases), by name."""
    found = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            found[stmt.targets[0].id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            found[stmt.target.id] = stmt.value  # `Segment: TypeAlias = int | tuple[int, int]`
    return found


def _value_annotation(node, aliases: dict, depth: int = 0) -> bool:
    """An annotation made only of Python value types (through module-level aliases)."""
    if depth > 8:
        return False
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            try:
                return _value_annotation(ast.parse(node.value, mode="eval").body, aliases, depth + 1)
            except SyntaxError:
                return False
        return node.value is None or node.value is Ellipsis
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _value_annotation(node.left, aliases, depth + 1) and _value_annotation(node.right, aliases, depth + 1)
    if isinstance(node, ast.Subscript):
        inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return _value_annotation(node.value, aliases, depth + 1) \
            and all(_value_annotation(item, aliases, depth + 1) for item in inner)
    if isinstance(node, ast.Name) and node.id in aliases and node.id not in _VALUE_NAMES:
        return _value_annotation(aliases[node.id], aliases, depth + 1)
    name = dotted(node)
    return name is not None and name.rsplit(".", 1)[-1] in _VALUE_NAMES


def _memoizing(function) -> bool:
    """Decorated `@lru_cache`, `@functools.cache`, `@lru_cache(maxsize=8)`: not a property."""
    for decorator in function.decorator_list:
        name = (dotted(decorator.func if isinstance(decorator, ast.Call) else decorator) or "").rsplit(".", 1)[-1]
        if name in ("lru_cache", "cache"):
            return True
    return False


def _keys_by_identity(function, params: set) -> bool:
    """`id(p)` of a parameter anywhere in the body: a memo by identity misses for each new object."""
    for node in every_node(function):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "id" \
                and len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id in params:
            return True
    return False


def value_memo(function, aliases: dict) -> tuple | None:
    """(start, end, name, MEMOIZED): the body of a memoized function whose every parameter is
    declared a Python value (see above); else None."""
    if not _memoizing(function) or not function.body:
        return None
    args = function.args
    if args.vararg is not None or args.kwarg is not None:
        return None
    params = [arg for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs] if arg.arg not in ("self", "cls")]
    if not all(arg.annotation is not None and _value_annotation(arg.annotation, aliases) for arg in params):
        return None
    if _keys_by_identity(function, {arg.arg for arg in params}):
        return None
    first = function.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(function.body) > 1:
        first = function.body[1]  # past the docstring
    last = function.body[-1]
    return (first.lineno, getattr(last, "end_lineno", None) or last.lineno, function.name, MEMOIZED)
