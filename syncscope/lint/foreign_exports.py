"""Functions a file hands to another runtime: only that runtime calls them.

    tvm_ffi.register_global_func("minfer.ops.fmha_sm100_plan", _fmha_sm100_plan_ffi)

    def _fmha_sm100_plan_ffi(*args):
        args = [_tvm_to_torch(a) for a in args]
        return fmha_sm100_plan(*args)        # the tree's planner, given what the caller gave

vLLM's vendored SM100 attention kernels export their planner to TVM FFI callers this way. The
wrapper's arguments come from the foreign caller; passed on with `*args`, they may be anything,
and made every parameter of the planner "unknown" for the whole tree, though every call a
serving step makes passes host lengths. Which registrations hand a function to another runtime
is a library fact (`[roots] foreign-exports`); uncalled.py takes the functions so handed, that
nothing in the tree calls, for code the serving step never runs.

Per file (`ast` only, recorded with the file's facts): the qualified names of the functions
written as an argument of such a registration, positional or keyword, a plain name or a dotted
one through the file's imports. Most files name no registration: one substring test each.
"""

from __future__ import annotations

import ast
from fnmatch import fnmatchcase

from .ast_annotations import dotted
from .nodewalk import every_node


def foreign_exports(tree: ast.Module, text: str, module: str, aliases: dict, patterns: tuple) -> tuple:
    """The qualified functions this file hands to a registration in `patterns` (see above)."""
    if not patterns or not any(pattern.rpartition(".")[2] in text for pattern in patterns):
        return ()
    found: list[str] = []
    for node in every_node(tree):
        if not isinstance(node, ast.Call):
            continue
        called = _qualified(dotted(node.func), module, aliases)
        if called is None or not any(fnmatchcase(called, pattern) for pattern in patterns):
            continue
        for value in (*node.args, *(keyword.value for keyword in node.keywords)):
            handed = _qualified(dotted(value), module, aliases)
            if handed is not None and handed not in found:
                found.append(handed)
    return tuple(found)


def _qualified(name: str | None, module: str, aliases: dict) -> str | None:
    """A dotted name as written -> its qualified name: through an import of its first part, else
    this module's own name."""
    if not name:
        return None
    head, dot, rest = name.partition(".")
    if head in aliases:
        return aliases[head] + dot + rest
    return f"{module}.{name}"
