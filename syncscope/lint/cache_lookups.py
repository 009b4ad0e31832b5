"""How a branch reads a cache before filling it (branches.py's `cache_fill`): the entry a
`name = DICT.get(key)` looked up, the capacity read from it that a growth test compares with the
size asked for, and keys that are an object's identity (a cache keyed by `id(x)` refills for every
new object, so it is no once-per-key cache)."""

from __future__ import annotations

import ast


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
            for inner in ast.walk(stmt.value):
                if isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Name):
                    found = entry_looked_up(inner.value.id, before)
                    if found is not None:
                        return found
            return None
    return None


def by_identity(key: ast.AST, before: list) -> bool:
    """Whether the key (or the local it names, assigned among `before`) reads an object's
    identity: `id(...)` or `.data_ptr()`."""
    nodes = [key]
    if isinstance(key, ast.Name):
        nodes += [stmt.value for stmt in before if isinstance(stmt, ast.Assign)
                  and any(isinstance(t, ast.Name) and t.id == key.id for t in stmt.targets)]
    for node in nodes:
        for inner in ast.walk(node):
            if isinstance(inner, ast.Call):
                called = inner.func
                if (isinstance(called, ast.Name) and called.id == "id") or \
                        (isinstance(called, ast.Attribute) and called.attr == "data_ptr"):
                    return True
    return False
