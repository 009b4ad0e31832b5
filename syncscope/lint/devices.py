"""Where a device argument points: `"cuda"`, `torch.device("cpu")`, `self.device`, `x.device`.
Shared by the analyzer (to know where `.to(...)` sends a value) and the copy rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from . import provenance as P
from .imports import dotted
from .vocabulary import called_device_place, literal_device_place, named_device_place

if TYPE_CHECKING:
    from .context import FunctionContext
    from .rules.base import CallInfo


def device_where(node: cst.BaseExpression, ctx: FunctionContext) -> P.Place | None:
    """HOST or DEVICE for a device expression (`"cuda"`, `torch.device("cpu")`, `self.device`,
    `x.device`); None for something that is not a device (a dtype, another tensor)."""
    if isinstance(node, cst.SimpleString):
        try:
            text = str(node.evaluated_value)
        except Exception:  # an odd literal: not a device we can name
            return None
        return literal_device_place(text)
    if isinstance(node, cst.Call):
        if ctx.resolve(node.func) == "torch.device":
            if node.args:
                return device_where(node.args[0].value, ctx) or P.DEVICE
            return P.DEVICE
        return called_device_place(dotted(node.func), ctx.config.name_hints.host_words)
    if isinstance(node, cst.Attribute) and node.attr.value == "device":
        owner = ctx.analyzer.peek(node.value, ctx)
        return P.HOST if owner == P.HOST else P.DEVICE
    if isinstance(node, cst.Name) and ctx.device_locals.get(node.value) == P.HOST:
        return P.HOST  # `grid_device = grid.device` of host data (`bind_device`)
    name = dotted(node)
    if name is None:
        return None
    qual = ctx.resolve(node)
    if qual is not None and qual.startswith("torch.") and not qual.startswith("torch.device"):
        return None  # torch.float16 and friends
    return named_device_place(name, ctx.config.name_hints.host_words)


def copy_target(info: CallInfo, ctx: FunctionContext) -> P.Place | None:
    """Where `x.to(...)` sends x: HOST, DEVICE, or None when it only changes the dtype or the
    target cannot be told."""
    device = info.kwarg("device")
    if device is not None:
        return device_where(device, ctx)
    for arg, _ in info.args[:1]:
        found = device_where(arg, ctx)
        if found is not None:
            return found
    return None


def is_non_blocking(info: CallInfo) -> bool:
    value = info.kwarg("non_blocking")
    if value is None:
        return False
    return not (isinstance(value, cst.Name) and value.value == "False")


def bind_device(ctx: FunctionContext, name: str, value: cst.BaseExpression | None) -> None:
    """Keep where a local points when it is bound, once in the function, to the device of host
    data: `grid_device = source_grid.device if isinstance(source_grid, torch.Tensor) else None`
    with `source_grid` host data (`None` is torch's default device, the host), so
    `torch.tensor(rows, device=grid_device)` builds on the host and copies nothing. A local bound
    twice, on any path, or a parameter rebound, is no such local (only the host is kept: a
    device stays a name's to tell)."""
    if name in ctx.bound or name in ctx.params:  # a parameter rebound under a test may still be the caller's
        if name in ctx.device_locals:
            ctx.device_locals[name] = None
        return
    ctx.bound.add(name)
    if value is not None and isinstance(value, (cst.Attribute, cst.IfExp)) and _host_device(value, ctx):
        ctx.device_locals[name] = P.HOST


def _host_device(node: cst.BaseExpression, ctx: FunctionContext) -> bool:
    """`x.device` of host data, or a conditional whose arms are such or None (one at least such)."""
    if isinstance(node, cst.IfExp):
        arms = (node.body, node.orelse)
        none = [isinstance(a, cst.Name) and a.value == "None" for a in arms]
        return not all(none) and all(n or _host_device(a, ctx) for a, n in zip(arms, none))
    return isinstance(node, cst.Attribute) and node.attr.value == "device" and device_where(node, ctx) == P.HOST


def device_owner(node: cst.BaseExpression | None, ctx: FunctionContext) -> cst.BaseExpression | None:
    """The tensor whose device a `device=x.device` argument names (`x`), when it is a local or a
    parameter the function knows to be a tensor: a copy to that device is one to the host where
    `x` is host data (a parameter every caller passes host memory for, a helper's host result),
    so a rule reports the copy on `x` (`report(..., subject=x)`). Not a field of the object
    (`self.buf.device`: `device_of` names the field), nor a value that may be no tensor (a
    module's `model.device`): the callers' Python objects are no evidence of its place. Nor a
    tensor the function itself puts on the device on some path (`seqlen = torch.full(...,
    device=embeds.device)` in one arm of an `if`, the parameter's data in the other: DEVICE
    after the merge), which the parameter does not decide."""
    if not isinstance(node, cst.Attribute) or node.attr.value != "device":
        return None
    owner = node.value
    if not isinstance(owner, cst.Name) or owner.value in ("self", "cls"):
        return None
    return owner if ctx.analyzer.peek(owner, ctx) == P.TENSOR else None
