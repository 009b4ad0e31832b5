"""A lazy call of a per-step root that fills the field it tests: the step has run it already.

An attention backend keeps the metadata of the step in a field that its per-step root fills,
and a forward method calls that root itself only when the field is still empty:

    def init_forward_metadata(self, forward_batch):        # a per-step root (`[roots] hot`)
        ...
        self.forward_metadata = self._metadata_from_forward_batch(forward_batch)

    def _resolve_metadata(self, forward_batch):
        if self.forward_metadata is None:                  # filled by the step's own call
            self.init_forward_metadata(forward_batch)      # a fallback
        return self.forward_metadata

memo.py reads `if self.x is None: self.init_x(...)` as a memo filled once per object, but not
where the filling method is a per-step root: that method runs every step, so its fill is no
memo. What the fallback call does is still not per-step work of its caller: the step calls
the root before its forward (that is what makes it a root), the root stores the field, so the
test finds it filled; and what the root syncs on is reported where it is, under the root
itself, whatever its callers. So the call's lines are cold ("runs only in a step that has not
called `init_forward_metadata` yet"), and the chains of the forward methods through it leave
the default report, while the syncs inside the root stay.

The store is read, not guessed from the name: the filling method is a method of the same class
whose body (not a nested function's) assigns `self.<field>` something other than None (`file_memos` marks such a record
with `FILLED`, per file, from the `ast` it already walks). A method named for the field that
stores elsewhere, or one only a base class defines, keeps memo.py's old judgement (a per-step
root: the call stays; any other: a memo once per object).
"""

from __future__ import annotations

import ast

FILLED = "<filled-by>"  # prefix of the filling method in a memo record: it stores the field itself


def own_stores(method: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The fields of `self` the method's own body fills (`self.x = v`, `self.x: T = v`, v not None)."""
    found: set[str] = set()
    todo = list(method.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue  # a nested function's store runs when it is called, if ever
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
                and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            # `self.x = None` empties it (an idle step): only a store of something fills it
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for leaf in (target.elts if isinstance(target, ast.Tuple) else [target]):
                    if isinstance(leaf, ast.Attribute) and isinstance(leaf.value, ast.Name) and leaf.value.id == "self":
                        found.add(leaf.attr)
        todo.extend(ast.iter_child_nodes(node))
    return found


def mark_filled(cls: ast.ClassDef, prefix: str, found: dict) -> None:
    """Mark the memo records of `cls`'s methods (in `found`, keyed `prefix + name`) whose filling
    method is a method of `cls` that stores the tested field itself: the method becomes
    `FILLED + method`."""
    methods = {stmt.name: stmt for stmt in cls.body if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))}
    stores: dict[str, set] = {}
    for name in methods:
        items = found.get(prefix + name)
        if not items:
            continue
        for index, (start, end, field, method) in enumerate(items):
            if not isinstance(method, str) or method.startswith("<") or method not in methods:
                continue
            if method not in stores:
                stores[method] = own_stores(methods[method])
            if field in stores[method]:
                items[index] = (start, end, field, FILLED + method)


def fallback_why(method: str, field: str, roots) -> str | None:
    """The cold reason of a memo record filled by `method`: for `FILLED + root`, the lazy call
    of a per-step root; None for anything else (memo.py decides it)."""
    if not method.startswith(FILLED):
        return None
    filler = method[len(FILLED):]
    if not roots.match(filler):
        return None
    return (f"runs only in a step that has not called `{filler}` yet: that per-step root stores "
            f"`self.{field}` itself, and what it syncs on is reported under it")
