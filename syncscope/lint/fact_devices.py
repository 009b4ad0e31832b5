"""Where a device argument points, in the whole-program call facts (facts.py, on `ast`): the same
reading as devices.device_where gives the per-file walk (on libcst). `scope` is facts._Scope:
its `env` (name -> Fact), `local_defs` and `file` (name resolution and name hints)."""

from __future__ import annotations

import ast

from . import provenance as P
from .ast_annotations import dotted
from .vocabulary import called_device_place, literal_device_place, named_device_place

DEVICE_ELEMENT = -2  # a call element `DEVICE_ELEMENT - k`: where the device in element k points (not element k)


def copy_target(scope, node: ast.Call, receiver):
    """The fact of `x.to(...)`: where it sends x (the same reading as devices.copy_target)."""
    device = next((k.value for k in node.keywords if k.arg == "device"), None)
    if device is None and node.args and not isinstance(node.args[0], ast.Starred):
        device = node.args[0]
    where = device_place(scope, device) if device is not None else None
    held = scope.env.get(device.id) if where == P.DEVICE and isinstance(device, ast.Name) else None
    if held is not None and isinstance(held[2], tuple) and held[2][1] >= 0:
        # `device, group = pick(...)`: the device element k of call #i names (config_defaults.py)
        return (where, None, (held[2][0], DEVICE_ELEMENT - held[2][1]))
    return receiver if where is None else (where, None, None)


def device_place(scope, node) -> P.Place | None:
    """Where a device argument points (the same reading as devices.device_where)."""
    if isinstance(node, ast.Constant):
        return literal_device_place(node.value) if isinstance(node.value, str) else None
    if isinstance(node, ast.Call):
        if scope.file.resolve_name(dotted(node.func) or "", scope.local_defs) == "torch.device":
            return (device_place(scope, node.args[0]) if node.args else None) or P.DEVICE
        return called_device_place(dotted(node.func), scope.file.hints.host_words)
    if isinstance(node, ast.Attribute) and node.attr == "device":
        owner = dotted(node.value)
        found = scope.env.get(owner) if owner else None
        where = found[0] if found is not None else scope.file.hints.where(owner.rsplit(".", 1)[-1]) if owner else P.UNKNOWN
        return P.HOST if where == P.HOST else P.DEVICE
    name = dotted(node)
    if name is None:
        return None
    qual = scope.file.resolve_name(name, scope.local_defs)
    if qual is not None and qual.startswith("torch.") and not qual.startswith("torch.device"):
        return None  # torch.float16 and friends
    return named_device_place(name, scope.file.hints.host_words)
