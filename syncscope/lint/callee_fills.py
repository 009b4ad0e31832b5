"""A memo test whose body calls a method of the class that stores the entry itself, for memo.py.

    def _apply_metadata(self, bs, seq_lens, ...):
        if bs not in self.decode_cuda_graph_metadata:          # a new batch size
            self._build_forward_metadata_cuda_graph(bs, None, seq_lens, ...)
            return
        metadata = self.decode_cuda_graph_metadata[bs]          # every later call

    def _build_forward_metadata_cuda_graph(self, bs, ...):
        ... seq_lens.tolist() ...                                # a sync, once per batch size
        self.decode_cuda_graph_metadata[bs] = metadata

(SGLang 0.5.23's DSA attention backend.) memo.py takes a body that stores the field, or calls a
method named for it (`self._init_step_index(...)` for `step_index`). Here the method has another
name; what it stores is read instead: the block is a fill when the method, defined in the same
class, stores in its own body (not in a nested function):
* for `key not in self.F`: `self.F[p] = v`, where `p` is the parameter that the call passes the
  tested `key` to by position (the entry the test misses is the one stored: once per key);
* for `self.F is None` (or `v is None` of `v = self.F`): `self.F = v`, `v` not None (root_fills'
  reading: once per object; a per-step root that stores it is root_fills' lazy call).
A call that passes the key another way, a method that stores another entry or another field,
or one a base class defines, is no fill: the block stays as it was. Records are plain tuples.
"""

from __future__ import annotations

import ast

CALLS = "<calls>"  # in a memo record: the block calls `self.m(...)`, to be read (`m#index` or `m#`)
FILLED_KEY = "<filled-key-by>"  # the called method stores the entry the test misses: once per key


def called_method(node, key: str | None) -> str | None:
    """CALLS + "m#i" for `self.m(...)` passing the tested `key` as its i-th positional argument
    (key None: an `is None` test, "m#"); None for anything else."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
        return None
    if key is None:
        return f"{CALLS}{node.func.attr}#"
    index = next((i for i, arg in enumerate(node.args) if isinstance(arg, ast.Name) and arg.id == key), None)
    return None if index is None else f"{CALLS}{node.func.attr}#{index}"


def _own_nodes(method):
    todo = list(method.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue  # a nested function's store runs when it is called, if ever
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _stores_entry(method, field: str, param: str) -> bool:
    """`self.<field>[<param>] = v` in the method's own body."""
    for node in _own_nodes(method):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Name) \
                        and target.slice.id == param and isinstance(target.value, ast.Attribute) \
                        and isinstance(target.value.value, ast.Name) and target.value.value.id == "self" \
                        and target.value.attr == field:
                    return True
    return False


def mark_called(cls: ast.ClassDef, prefix: str, found: dict, stores) -> None:
    """Read the CALLS records of `cls`'s methods (in `found`, keyed `prefix + name`): a call of
    a method of `cls` that stores what the test misses becomes FILLED_KEY + m (an entry) or
    `filled` + m (a field: `stores(method)` are the fields it fills, root_fills' FILLED);
    any other is dropped."""
    from .root_fills import FILLED

    methods = {stmt.name: stmt for stmt in cls.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for name in methods:
        items = found.get(prefix + name)
        if not items:
            continue
        kept = []
        for start, end, field, method in items:
            if not (isinstance(method, str) and method.startswith(CALLS)):
                kept.append((start, end, field, method))
                continue
            callee, _, index = method[len(CALLS):].partition("#")
            target = methods.get(callee)
            if target is None:
                continue
            if not index:
                if field in stores(target):
                    kept.append((start, end, field, FILLED + callee))
                continue
            params = [a.arg for a in (*target.args.posonlyargs, *target.args.args)][1:]  # past `self`
            position = int(index)
            if position < len(params) and _stores_entry(target, field, params[position]):
                kept.append((start, end, field, FILLED_KEY + callee))
        if kept:
            found[prefix + name] = kept
        else:
            found.pop(prefix + name, None)
