"""A class that imports another platform's package when it is built never runs on a CUDA GPU.

SGLang 0.5.23's `WaveAttnBackend` (the "wave" attention backend, listed under "AMD specific" in
its server arguments) runs kernels written in Wave (`wave_lang`, iree-org/wave), which targets
AMD GPUs only; its `__init__` begins with `import wave_lang.kernel.wave.cache as cache`. On a CUDA
install that import fails, so the object is never built there and none of its methods (the
per-step `forward_extend` with its `.item()` reads) runs on CUDA, though no name or path of it
says so. Library facts `[platform] other-packages` name such packages (top-level package names).

The rule: a class whose own `__init__` imports a module of one of those packages in a statement
of its body's top level (not under an `if`, `try`, `with` or loop), with no `return` before it, is
cold as a whole, as a class named for another platform is (branches.platform_name). A subclass
that calls `super().__init__()` imports it too; one that builds itself without it is the case
this reading does not follow (as for a class named for another platform).
"""

from __future__ import annotations

import ast


def foreign_import(node: ast.ClassDef, packages: frozenset) -> str | None:
    """The module of another platform's package that the class's `__init__` always imports."""
    if not packages:
        return None
    init = next((s for s in node.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and s.name == "__init__"), None)
    for stmt in init.body if init is not None else ():
        for module in _imported(stmt):
            if module.split(".", 1)[0] in packages:
                return module
        if _may_return(stmt):
            return None  # `__init__` may end before the imports that follow
    return None


def _imported(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, ast.Import):
        return [alias.name for alias in stmt.names]
    if isinstance(stmt, ast.ImportFrom) and not stmt.level and stmt.module:
        return [stmt.module]
    return []


def _may_return(stmt: ast.stmt) -> bool:
    """A `return` somewhere in the statement, not inside a nested function or class."""
    stack = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            return True
        stack.extend(child for child in ast.iter_child_nodes(node)
                     if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)))
    return False
