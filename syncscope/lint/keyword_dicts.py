"""The dicts of known keys a function passes as `**name` (branches.py reads them for the shape of
a call dispatched by name, so that a target it cannot bind to is not followed)."""

from __future__ import annotations

import ast
from .nodewalk import every_node


def keyword_dicts(function) -> dict[str, tuple]:
    """The locals of a function bound once, to a dict display with string keys (`kwargs =
    {"sm_scale": s, "k_scale": k}`), and never shrunk (`del`, `.pop`, `.clear`, rebinding, passed
    on to a call that may change it): `f(q, **kwargs)` passes at least those keywords. SGLang's
    MiniCPM attention adapter calls `self.active_wrapper.forward(q, (k, v), **kwargs)`: with
    `sm_scale` among them, it cannot bind to a pipeline stage's `forward(self, batch,
    server_args)`. Nested definitions are left out (their names are their own)."""
    displays: dict[str, list] = {}
    spoiled: set[str] = set()
    pending = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    displays.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            if isinstance(node.target, ast.Name):
                spoiled.add(node.target.id)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            spoiled.update(n.id for n in every_node(node.target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            spoiled.update(n.id for item in node.items if item.optional_vars is not None
                           for n in every_node(item.optional_vars) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Delete):
            spoiled.update(n.id for t in node.targets for n in every_node(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                    func.attr in ("pop", "popitem", "clear", "__delitem__"):
                spoiled.add(func.value.id)
            spoiled.update(a.id for a in node.args if isinstance(a, ast.Name))
            spoiled.update(k.value.id for k in node.keywords if k.arg is not None and isinstance(k.value, ast.Name))
        pending.extend(ast.iter_child_nodes(node))
    args = function.args
    spoiled.update(a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a)
    found = {}
    for name, values in displays.items():
        if name in spoiled or len(values) != 1 or not isinstance(values[0], ast.Dict):
            continue
        keys = values[0].keys
        if keys and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys):
            found[name] = tuple(k.value for k in keys)
    return found
