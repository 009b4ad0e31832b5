"""A local bound once to a field of a typed object, or to what one of its methods returns, stands
for that expression as a receiver.

    def _reclaim_orphans(self, group):
        allocator = self.token_to_kv_pool_allocator     # `token_to_kv_pool_allocator: Base...`
        allocator.free(orphans)                          # the field's `free`, not every `free`

Without this the call's receiver had no class (a plain local), so the call reached every method
named `free` in the tree, SGLang's host pools' among them, whose `.cpu()` of their own host
indices was reported per step. The facts, about code (facts.py's walk of one function):
* a local bound exactly once in the function, by `name = <typed>.a.b` (the chain's root a name
  whose class the walk knows: `self`, an annotated parameter, a constructed object), is the
  receiver `<typed>.a.b` in a method call made on it (`name.m(...)`, `name.c.m(...)`);
* so is a local bound exactly once by `name = <typed>.m()` (a method called with no arguments):
  `courier = self._ensure_courier()` then `courier.submit(i)` is `self._ensure_courier().submit(i)`,
  whose class the method's return annotation tells (`-> Optional[Courier]`; program.py
  `returned_class`). SGLang diffusion's layer offload so reached every `submit` of the tree, the
  streaming VAE decode queue's among them, from the LLM runtime's per-step code;
* a local bound any other way, or more than once (a second assignment, a loop, a parameter of
  that name), stands for nothing: its calls stay calls on a receiver of unknown class.
"""

from __future__ import annotations

import ast

from .nodewalk import function_code

REBOUND = None  # a local bound more than once, or not to a field


def note_local(scope, name: str, value) -> None:
    """Record how `name = value` binds a local of the function `scope` walks. The first binding
    the walk meets decides: a second one anywhere in the function makes the local stand for
    nothing (it is counted in the function's code, loops and nested blocks included)."""
    known = scope.field_locals
    if name in known:
        return
    expression = value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and not value.args and not value.keywords:
        expression = value.func  # `<typed>.m()`: the method's receiver must be typed
    root = expression
    while isinstance(root, ast.Attribute):
        root = root.value
    typed = isinstance(expression, ast.Attribute) and isinstance(root, ast.Name) and root.id in scope.types
    known[name] = value if typed and _bound_once(scope.node, name) else REBOUND


def receiver_parts(scope, node) -> tuple:
    """(the object a receiver expression starts from, the names of the fields read off it, the
    last one first); a local that stands for a field is read as that field (`allocator.pool`:
    `self`, ["pool", "token_to_kv_pool_allocator"])."""
    hops: list[str] = []
    for expand in (True, False):
        while isinstance(node, ast.Attribute):
            hops.append(node.attr)
            node = node.value
        if expand and isinstance(node, ast.Name) and node.id not in scope.types:
            node = scope.field_locals.get(node.id) or node
    return node, hops


def _bound_once(function, name: str) -> bool:
    """The function's own code stores into the local once, and it is no parameter."""
    if function is None:
        return False
    args = function.args
    if any(a.arg == name for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a):
        return False
    stores = 0
    for node in function_code(function):
        if type(node) is ast.Name and node.id == name and type(node.ctx) is not ast.Load:
            stores += 1
        elif type(node) in (ast.Global, ast.Nonlocal) and name in node.names:
            return False
    return stores == 1
