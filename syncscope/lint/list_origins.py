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

In the same way, a list bound to `[]` whose every `append` in the function gives host data
(`grid_thw_list.append(torch.as_tensor(getattr(item, "grid_thw", None)))`, a carrier's host
attribute) is joined on the host: torch joins tensors of one device only, so `torch.cat(
grid_thw_list)` is host data (`joined_place`).

And a joining function given a call's result (`torch.stack(flatten_nested_list([item.tgt_size
for item in items]))`) joins the items that call returns: the value comes from that helper's
items (`flatten_nested_list#-1`, `joined_call`), which the whole-program pass reads where the
helper's return summary says (a list of its argument's items: made_values.py; a list of Python
values gives tensors of unknown place).

A list is a Python value (`P.PY`), but its items need not be: `picked = []; picked.append((rows,
select_block_ids(scores)))` holds tensors. A `for` over a list bound to `[]` that was given
anything but a Python scalar (a tuple or list, a tensor, a value of unknown place; any `extend`,
`insert`, ...) binds its target to an unknown place, not to a Python number (`mixed_items`,
read by evaluate.iter_where), as `zip`/`enumerate` items already are (evaluate.iter_parts): a
rule that needs a Python number (SYN406's `blocks[rows, :w] = ids`) must not take such an item
for one. A list given only Python scalars (`lens.append(len(r))`) keeps Python items.
"""

from __future__ import annotations

import libcst as cst

from . import provenance as P

from .vocabulary import JOINING_FUNCTIONS

FRESH = ""  # bound to `[]`, nothing appended yet
_ADDING = frozenset("extend insert __iadd__ __setitem__".split())


def bound(ctx, name: str, value: cst.BaseExpression | None) -> None:
    """`name = value`: an empty list literal starts a list whose items are followed."""
    ctx.mixed_items.discard(name)
    if isinstance(value, cst.List) and not value.elements:
        ctx.appended[name] = ctx.appended_places[name] = FRESH
    else:
        ctx.appended.pop(name, None)
        ctx.appended_places.pop(name, None)


def note_call(call: cst.BaseExpression, ctx) -> None:
    """A call statement: `parts.append(x)` keeps the list's origin when x has the same one."""
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
            and isinstance(call.func.value, cst.Name)):
        return
    name, method = call.func.value.value, call.func.attr.value
    if method in _ADDING and name in ctx.appended_places:
        ctx.appended_places[name] = None  # items of another source (`append`: `joined_place` saw it)
        ctx.mixed_items.add(name)  # items not followed: not known to be Python scalars
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


def joined_place(info, ctx) -> P.Place | None:
    """The rules' walk (evaluate.py), for each call: `parts.append(x)` of a list bound to `[]`
    notes whether x is host data; `torch.cat(parts)` (any joining function, no `device=`) of a
    list whose every appended item is host data is host data. None: the call's own reading."""
    if info.method == "append" and isinstance(info.receiver, cst.Name):
        name = info.receiver.value
        if name in ctx.appended_places:
            plain = len(info.args) == 1 and not info.kwargs and not info.has_star_args
            host = plain and info.args[0][1] == P.HOST and ctx.appended_places[name] in (FRESH, P.HOST)
            ctx.appended_places[name] = P.HOST if host else None
            if not (plain and _python_scalar(*info.args[0])):
                ctx.mixed_items.add(name)
        return None
    first = info.args[0][0] if info.args else None
    qualname = info.qualname or ""
    if isinstance(first, cst.Name) and ctx.appended_places.get(first.value) == P.HOST \
            and qualname.startswith("torch.") and qualname.rsplit(".", 1)[-1] in JOINING_FUNCTIONS \
            and "device" not in info.kwargs:
        return P.HOST
    return None


def joined_call(node: cst.Call, ctx) -> cst.Call | None:
    """`torch.stack(helper(x))` (any joining function, no `device=`): the call whose returned
    items it joins."""
    if not node.args or node.args[0].keyword is not None or node.args[0].star or \
            not isinstance(node.args[0].value, cst.Call):
        return None
    qualified = ctx.resolve(node.func)
    if qualified is None or not qualified.startswith("torch.") or qualified.rsplit(".", 1)[-1] not in JOINING_FUNCTIONS \
            or any(a.keyword is not None and a.keyword.value == "device" for a in node.args):
        return None
    return node.args[0].value


_CONTAINERS = (cst.Tuple, cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp,
               cst.GeneratorExp)


def _python_scalar(node: cst.BaseExpression, where: P.Place) -> bool:
    """An appended item that is a Python scalar: a Python value (`P.PY`) that is no container
    literal (a tuple's members may be tensors, though the tuple is a Python value)."""
    return where == P.PY and not isinstance(node, _CONTAINERS)
