"""Modules a function imports for itself: a call on one is a module's function, no method call.

`import gguf` inside a function binds the local name `gguf` to a module, as the same statement
at the top of the file binds a global one. The per-file walk (branches.py) already leaves the
calls on a module the file imports at its top (`torch.cat(...)`, `np.asarray(...)`) out of its
calls by name, the method calls on receivers of unknown class that the whole-program pass may
land in any method of that name: the pass resolves a module's functions by the import. A
function-local import was not so read, so SGLang's weight loader `_runtime_gguf_weights`, which
runs `import gguf` and then `gguf.dequantize(tensor.numpy(), packed_types[name])`, counted as a
call by name of every tree method named `dequantize` it could bind to: among them
`NVFP4KVQuantizeUtil.dequantize`, whose number-only branch (numberguards.py) every caller that
passes a scale passes a tensor, and which that call, with no record of what it passes, kept
undecided.

The fact: a name a function binds with `import m` / `import a.b as m` (not `from m import x`,
which may bind any object) holds a module in that function and in the functions nested in it;
`m.f(...)` calls the module's function `f`. As for the file's own imports, the name is read as the
module wherever those functions call on it directly (`m.f(...)`; a call on something reached
from it, `m.Cls.f(...)` or `m.get().f(...)`, may still be a method and stays a call by name), from
the import's line on in the walk's order.
"""

from __future__ import annotations

import ast


def note_import(walk, stmt: ast.Import, function: str) -> None:
    """Record the names `import ...` binds in `function` (the walk's local qualname)."""
    names = walk.local_modules.setdefault(function, set())
    names.update(alias.asname or alias.name.split(".")[0] for alias in stmt.names)


def module_receiver(walk, receiver, function: str) -> bool:
    """`receiver` is a plain name `function` (or a function it is nested in) bound by `import`."""
    if not (walk.local_modules and isinstance(receiver, ast.Name)):
        return False
    while function:
        if receiver.id in walk.local_modules.get(function, ()):
            return True
        if receiver.id in walk.params.get(function, ()):
            return False  # a parameter of a nested function hides the outer import
        function = function.rpartition(".")[0]
    return False
