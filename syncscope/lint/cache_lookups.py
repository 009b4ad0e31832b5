"""How a branch reads a cache before filling it (branches.py's `cache_fill`): the entry a
`name = DICT.get(key)` looked up, the capacity read from it that a growth test compares with the
size asked for, and keys that are an object's identity (a cache keyed by `id(x)` refills for every
new object, so it is no once-per-key cache, unless the object is a module of the model)."""

from __future__ import annotations

import ast
from .nodewalk import every_node


def entry_looked_up(name: str, before: list) -> tuple[str, ast.AST] | None:
    """(the dict, the key) of the last `name = DICT.get(key)` among `before`, else None."""
    for stmt in reversed(before):
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            value = stmt.value
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get" \
                    and isinstance(value.func.value, ast.Name) and value.args:
                return value.func.value.id, value.args[0]
            return None
    return None


GROWTH = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def capacity_of(node: ast.AST, before: list) -> tuple[str, ast.AST] | None:
    """(the dict, the key) when `node` is a local read from an entry of a dict looked up among
    `before`: `cap = 0 if cached is None else int(cached["cap_bs"])` after `cached =
    DICT.get(key)` (the capacity a growth test compares with the size asked for), else None."""
    if not isinstance(node, ast.Name):
        return None
    for stmt in reversed(before):
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in stmt.targets):
            for inner in every_node(stmt.value):
                if isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Name):
                    found = entry_looked_up(inner.value.id, before)
                    if found is not None:
                        return found
            return None
    return None


def by_identity(key: ast.AST, before: list, modules=(frozenset(), frozenset())) -> bool:
    """Whether the key (or the local it names, assigned among `before`) reads an object's
    identity: `id(...)` or `.data_ptr()`. `modules`: the function's parameters declared an
    `nn.Module`, and those declared a list of them (memo_params.module_params): `id(layer)` and
    `id(layers[0])` read a module's identity, which stays the same while the model lives."""
    nodes = [key]
    if isinstance(key, ast.Name):
        nodes += [stmt.value for stmt in before if isinstance(stmt, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == key.id for t in stmt.targets)]
    for node in nodes:
        for inner in every_node(node):
            if isinstance(inner, ast.Call):
                called = inner.func
                if isinstance(called, ast.Name) and called.id == "id":
                    if not _of_module(inner, *modules):
                        return True
                elif isinstance(called, ast.Attribute) and called.attr == "data_ptr":
                    return True
    return False


def _of_module(call: ast.Call, modules: frozenset, module_lists: frozenset) -> bool:
    """`id(layer)` of a module parameter, or `id(layers[0])` of an item of a list of them."""
    if len(call.args) != 1 or call.keywords:
        return False
    arg = call.args[0]
    if isinstance(arg, ast.Name):
        return arg.id in modules
    return isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name) and arg.value.id in module_lists \
        and isinstance(arg.slice, ast.Constant) and type(arg.slice.value) is int


def filled_after(stmt: ast.If, rest: list, before: list, module_names: frozenset) -> str | None:
    """The module-level dict whose hit returns early, when the rest of the block fills it:
    `cached = _META.get(key)`, `if cached is not None: return cached`, then build and
    `_META[key] = meta`. The process keeps the dict, so the rest runs once per key (as
    branches.cache_fill's `if cached is None:` form); not when the key reads an identity."""
    test = stmt.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot)
            and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None):
        return None
    if stmt.orelse or not stmt.body or not isinstance(stmt.body[-1], ast.Return):
        return None
    looked_up = entry_looked_up(test.left.id, before)
    if looked_up is None or looked_up[0] not in module_names or by_identity(looked_up[1], before):
        return None
    cache = looked_up[0]
    if any(isinstance(inner, ast.Name) and inner.id == cache and isinstance(inner.ctx, ast.Store)
           for node in before for inner in every_node(node)):
        return None  # a local of that name (`_META = {}` in the function): new on every call
    stored = any(isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == cache
                 for node in rest for inner in every_node(node) if isinstance(inner, ast.Assign)
                 for target in inner.targets)
    return f"fills the module's cache `{cache}`: runs once per key" if stored else None
