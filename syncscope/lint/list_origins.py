"""Where the items of a local list come from: `parts = []; parts.append(helper(x)[k])`.

A function often collects what a helper gives into a list and joins it:

    cu_seqlens_parts = []
    for t, h, w in grid_thw:
        cos, sin, cu_seqlens_thw = self.rope_by_thw(t, h, w)
        cu_seqlens_parts.append(cu_seqlens_thw)
    cu_seqlens = torch.cat(cu_seqlens_parts)

torch joins tensors of one device only, so the joined tensor lives where the appended items
live. A list bound to an empty literal (`[]`) whose every `append` in the function gives a value
computed from the same helper result (context.origin_of: `rope_by_thw#2`) has that origin too,
and `torch.cat(parts)` (any joining function) takes it; the whole-program pass then asks where
that result lives (wholeprogram.Solver.origin_value), as for `cu = rope_by_thw(...)[2]`. An
`append` of anything else, any other method that adds items (`extend`, `insert`, ...), or a new
binding of the name forgets it.
"""

from __future__ import annotations

import libcst as cst

from .vocabulary import JOINING_FUNCTIONS

FRESH = ""  # bound to `[]`, nothing appended yet
_ADDING = frozenset("extend insert __iadd__ __setitem__".split())


def bound(ctx, name: str, value: cst.BaseExpression | None) -> None:
    """`name = value`: an empty list literal starts a list whose items are followed."""
    if isinstance(value, cst.List) and not value.elements:
        ctx.appended[name] = FRESH
    else:
        ctx.appended.pop(name, None)


def note_call(call: cst.BaseExpression, ctx) -> None:
    """A call statement: `parts.append(x)` keeps the list's origin when x has the same one."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
            and isinstance(call.func.value, cst.Name)):
        return
    name, method = call.func.value.value, call.func.attr.value
    if name not in ctx.appended:
        return
    state = ctx.appended[name]
    if method == "append" and state is not None and len(call.args) == 1 and call.args[0].keyword is None \
            and not call.args[0].star:
        origin = ctx.origin_of(call.args[0].value)
        if origin is not None and state in (FRESH, origin):
            ctx.appended[name] = origin
            ctx.origins[name] = origin
            return
    elif method != "append" and method not in _ADDING:
        return  # `parts.copy()`, `parts.index(x)`: adds nothing
    ctx.appended[name] = None  # items of another source: where they live is not followed
    ctx.origins.pop(name, None)


def joined_list(node: cst.Call, ctx) -> cst.Name | None:
    """`torch.cat(parts)` of a list whose items all come from one helper result: the list."""
    if not node.args or node.args[0].keyword is not None or node.args[0].star:
        return None
    first = node.args[0].value
    if not isinstance(first, cst.Name) or not ctx.appended.get(first.value):
        return None
    qualified = ctx.resolve(node.func)
    if qualified is None or not qualified.startswith("torch.") or qualified.rsplit(".", 1)[-1] not in JOINING_FUNCTIONS:
        return None
    return first
