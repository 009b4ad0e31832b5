"""Refills of a host-only field that stay where the field is.

vLLM's models select items for their encoder CUDA graph by building the field again:
`{"grid_thws": torch.tensor(rows, device=grid_device)}`. Built on `pixel_values.device`, such a
refill is device data and the field is no longer host data in that module
(`classinfo._refilled_on_the_device`). Built on the device of the field it refills
(`source_grid = mm_kwargs["grid_thws"]; grid_device = source_grid.device if
isinstance(source_grid, torch.Tensor) else None`), the refill lives where the field lives: a
host-only field refilled so stays on the host (`device=None` is torch's default, the host).
"""

from __future__ import annotations

import ast
from .nodewalk import every_node

_DEPTH = 4  # locals followed from a `device=` argument back to the field read
# a file's second walk (refill_variant.py) keeps its refilled fields host; FOUND: field -> the
# names of the functions that refill it on the device, as the last walk found them
KEEP = False
FOUND: dict[str, set] = {}


def single_assignments(statements) -> dict[str, ast.expr]:
    """Locals a function binds exactly once (a plain `name = value`), with that value."""
    seen: dict[str, ast.expr | None] = {}
    for stmt in statements:
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            targets = [stmt.target]
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            targets = [item.optional_vars for item in stmt.items if item.optional_vars is not None]
        else:
            targets = []
        for target in targets:
            for name in every_node(target):
                if isinstance(name, ast.Name):
                    single = isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and target is name
                    seen[name.id] = stmt.value if single and name.id not in seen else None
    return {name: value for name, value in seen.items() if value is not None}


def on_the_fields_device(value: ast.AST, assigns: dict[str, ast.expr], names) -> bool:
    """Whether `value` is a call that builds its result on the device of a read of one of the
    host-only fields `names` (`torch.tensor(rows, device=mm_kwargs["grid_thws"].device)`,
    through locals bound once), or on no device at all in the other arm of a conditional."""
    if isinstance(value, ast.Name):
        value = assigns.get(value.id, value)
    if not isinstance(value, ast.Call):
        return False
    target = next((k.value for k in value.keywords if k.arg == "device"), None)
    return target is not None and _field_device(target, assigns, names, 0)


def _field_device(node: ast.AST, assigns, names, depth: int) -> bool:
    if isinstance(node, ast.Name) and node.id in assigns and depth < _DEPTH:
        return _field_device(assigns[node.id], assigns, names, depth + 1)
    if isinstance(node, ast.IfExp):
        arms = (node.body, node.orelse)
        if not any(_field_device(arm, assigns, names, depth) for arm in arms):
            return False
        return all(_field_device(arm, assigns, names, depth) or _is_none(arm) for arm in arms)
    return isinstance(node, ast.Attribute) and node.attr == "device" and _field_read(node.value, assigns, names, depth)


def _field_read(node: ast.AST, assigns, names, depth: int) -> bool:
    """`mm_kwargs["grid_thws"]`, `kwargs.get("grid_thws")` / `.pop(...)`, or a local bound once to one."""
    if isinstance(node, ast.Name) and node.id in assigns and depth < _DEPTH:
        return _field_read(assigns[node.id], assigns, names, depth + 1)
    if isinstance(node, ast.Subscript):
        key = node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("get", "pop") \
            and node.args:
        key = node.args[0]
    else:
        return False
    return isinstance(key, ast.Constant) and key.value in names


def _is_none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None
