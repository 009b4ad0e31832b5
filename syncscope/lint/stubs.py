"""Methods a base class has only to be overridden: a call resolved to one runs an override.

    class BaseTokenToKVPoolAllocator(abc.ABC):
        def free(self, free_index: torch.Tensor):
            raise NotImplementedError()

    class BeamCoordinator(msgspec.Struct):
        token_to_kv_pool_allocator: BaseTokenToKVPoolAllocator

        def _reclaim_orphans(self, group):
            self.token_to_kv_pool_allocator.free(orphans)   # SWATokenToKVPoolAllocator.free, ...

(SGLang's beam search.) A method is a stub when it is an `@abstractmethod` or its body, less a
docstring, is one `raise NotImplementedError`, `...` or `pass`. A method call whose receiver's
declared class resolves it to a stub runs whichever override the object has; the program cannot
tell which, so the per-step walk follows the call by name (reachability.py `calls_of`), to the
methods of that name in the declared class's family only (receivers.py): not to the host
pools' `free`, which a call by name on a receiver of unknown class reaches. Reached so, an
override's own syncs run per step, but the call is not reported as reaching them (no
SYN601/SYN602 at the call: the sync summaries still read the stub, which syncs nothing): it
may run another override. What a call passes still reaches every override
(wholeprogram.py `host_fed`). A method that does something is taken as what runs, as before.

The facts, per class (facts.py): `stubs`, the names of its methods that are stubs, kept only
for a class that has one.
"""

from __future__ import annotations

import ast


def is_stub(function) -> bool:
    """Whether a method is there to be overridden: `@abstractmethod`, or a body (less its
    docstring) of one `raise NotImplementedError`, `...` or `pass`."""
    for decorator in function.decorator_list:
        name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
        if "abstract" in name:
            return True
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    if len(body) != 1:
        return False
    only = body[0]
    if isinstance(only, ast.Pass):
        return True
    if isinstance(only, ast.Expr) and isinstance(only.value, ast.Constant) and only.value.value is Ellipsis:
        return True
    if isinstance(only, ast.Raise) and only.exc is not None:
        exc = only.exc.func if isinstance(only.exc, ast.Call) else only.exc
        return (exc.attr if isinstance(exc, ast.Attribute) else getattr(exc, "id", "")) == "NotImplementedError"
    return False


def note_stubs(info: dict, node: ast.ClassDef) -> None:
    """Record in a class's facts the names of its methods that are stubs."""
    stubs = [item.name for item in node.body
             if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_stub(item)]
    if stubs:
        info["stubs"] = tuple(stubs)


def stub_methods(program) -> frozenset:
    """The qualified names of the tree's stub methods."""
    return frozenset(f"{cls}.{name}" for cls, info in program.classes.items() for name in info.get("stubs", ()))
