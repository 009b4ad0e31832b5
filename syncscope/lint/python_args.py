"""Which parameters the tree's calls pass a Python number for, by the callee's name.

A store `buf[idx] = value` into a device tensor copies `value` from the host when it is a
Python number (docs/sync-forms.md). When `value` is a parameter, only the callers tell: SGLang's
`set_mamba_ping_pong_slot(self, req, idx, value)` is called with `-1` in the per-step result
processor and with a device element elsewhere. The rules report such a store on the condition
that some call passes a number for the parameter (`RawFinding.python_arg`); the run decides here,
once every file is read:

* per file (`literal_calls`, `ast`, statements only: the setter calls this is for are statements
  of their own, `pool.set_slot(req, i, -1)`): callee name -> (position, keyword, caller) of each
  argument that is a number literal (`0`, `-1`, `1.5`, `True`), in functions that are not
  set-up code by name;
* per run (`PythonArgs.fed`): a call of that name (a method call for a method, positions shifted
  past `self`) passes a number for the parameter, from a function that runs every step when the
  run knows which do. Calls are matched by the callee's name, the way the per-step scope follows
  a method call on a receiver of unknown class (reachability.py).
"""

from __future__ import annotations

import ast

from .classinfo import function_statements


def literal_calls(tree: ast.Module, module: str | None, is_cold) -> dict[str, frozenset]:
    found: dict[str, set] = {}

    def visit(body, classes: list[str], prefix: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                visit(stmt.body, classes + [stmt.name], f"{prefix}{stmt.name}.")
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not is_cold(stmt.name, classes):
                    _function(stmt, f"{module}.{prefix}{stmt.name}" if module else f"{prefix}{stmt.name}", found)

    visit(tree.body, [], "")
    return {name: frozenset(items) for name, items in found.items()}


def _function(function, caller: str, found: dict) -> None:
    for stmt in function_statements(function):
        call = getattr(stmt, "value", None)
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        if isinstance(func, ast.Attribute):
            name, through = func.attr, "method"
        elif isinstance(func, ast.Name):
            name, through = func.id, "function"
        else:
            continue
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break  # the positions after it are unknown
            if _number(arg):
                found.setdefault(name, set()).add((through, position, None, caller))
        for keyword in call.keywords:
            if keyword.arg is not None and _number(keyword.value):
                found.setdefault(name, set()).add((through, None, keyword.arg, caller))


def _number(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float))  # bools are ints


class PythonArgs:
    def __init__(self, results: dict, per_step: dict | None) -> None:
        self.calls: dict[str, set] = {}
        for result in results.values():
            for name, items in (getattr(result, "literal_calls", None) or {}).items():
                self.calls.setdefault(name, set()).update(items)
        self.per_step = per_step

    def fed(self, arg: tuple) -> bool:
        """`arg` = (qualified function, parameter, its index among the parameters, a method)."""
        function, param, index, method = arg
        for through, position, keyword, caller in self.calls.get(function.rsplit(".", 1)[-1], ()):
            if method and through != "method":
                continue  # `name(...)` calls a function of that name, not this method
            if keyword is not None:
                if keyword != param:
                    continue
            elif position + (1 if method else 0) != index:
                continue
            if self._runs_per_step(caller):
                return True
        return False

    def _runs_per_step(self, caller: str) -> bool:
        if self.per_step is None:
            return True
        name = caller
        while name:
            if name in self.per_step:
                return True
            if "." not in name:
                return False
            name = name.rsplit(".", 1)[0]
        return False
