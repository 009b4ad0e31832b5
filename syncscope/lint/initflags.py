"""Lazy set-up of a module-level object behind an "initialized" flag that returns early.

    IPC_A2A_MULTI = IpcA2AMultiState()

    def ipc_a2a_multi_ready(group) -> bool:
        if IPC_A2A_MULTI.failed:
            return False
        if IPC_A2A_MULTI.inited:          # every call after the first returns here
            return True
        IPC_A2A_MULTI.init(group)          # sets `self.inited = True`
        agreed = torch.tensor([int(ok)], device="cuda")
        dist.all_reduce(agreed, ...)
        if agreed.item() == 0: ...         # once per process (per group)

(SGLang diffusion's IPC all-to-all, reached from the Ulysses attention of every DiT step.) The
object is bound at module level, so it lives as long as the process: what follows the early
return runs once, and the `.item()` there is no per-step sync. memo.py decides the same for
fields of `self`, where the object's lifetime needs the whole program.

Told by: a test that is just `NAME.<flag>` on a module-level name, with a flag named for being
initialized (`inited`, `initialized`, `initialised`, `_initialized`), a body that ends in
`return`, and a rest of the block that sets the flag, directly (`NAME.inited = True`) or by
calling the object's initializer (`NAME.init(...)`, `NAME.initialize(...)`, `NAME._init_x(...)`).
Not `if not NAME.inited: NAME.init()` written the other way round (its body, not the rest, is
the once-only part; no such form led to a finding) and not a flag on any other receiver.
"""

from __future__ import annotations

import ast

from .cache_lookups import filled_after
from .nodewalk import every_node

_INIT_FLAGS = frozenset(("inited", "initialized", "initialised", "is_initialized", "is_inited"))
_INITIALIZERS = ("init", "initialize", "initialise", "setup", "_init", "_initialize", "_setup")


def _flag(test, module_names: frozenset) -> tuple[str, str] | None:
    if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id in module_names \
            and test.attr.lstrip("_") in _INIT_FLAGS:
        return test.value.id, test.attr
    return None


def _sets(rest, owner: str, flag: str) -> bool:
    for stmt in rest:
        for node in every_node(stmt):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is True:
                if any(isinstance(t, ast.Attribute) and t.attr == flag and isinstance(t.value, ast.Name)
                       and t.value.id == owner for t in node.targets):
                    return True
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == owner:
                name = node.func.attr
                if name in _INITIALIZERS or name.startswith(("init_", "_init_", "initialize_")):
                    return True
    return False


def once_after(stmt: ast.If, rest: list, module_names: frozenset, before: list = ()) -> str | None:
    """Why the statements after `stmt` run once per process (or once per key of a module-level
    dict whose hit returns early: cache_lookups.filled_after), or None."""
    found = _flag(stmt.test, module_names)
    if found is None and before:
        return filled_after(stmt, rest, before, module_names)
    if found is None or stmt.orelse or not stmt.body or not isinstance(stmt.body[-1], ast.Return) or not rest:
        return None
    owner, flag = found
    if not _sets(rest, owner, flag):
        return None
    return f"runs once per process: lazy set-up of `{owner}` (module level), skipped once `{owner}.{flag}` is set"
