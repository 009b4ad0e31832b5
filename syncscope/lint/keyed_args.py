"""`f(**args)` with `args` a local dict literal (issue 24, "host data taken for device data").

vLLM's Kanana-V calls its vision tower as

    vision_model_args = {"pixel_values": pixel_values, "grid_thw": image_metas["vision_grid_thw"]}
    v_outputs = self.vision_model(**vision_model_args)

A `**mapping` may pass any parameter, so the call facts read it as passing anything. But a local
bound once to a dict literal whose keys are all string literals, and never changed after (no
item store or delete, no method call on it, no other binding in the function), passes exactly
those keys: the call facts take them as keywords (facts._Scope), and what each value is decides
as for `f(grid_thw=...)`.
"""

from __future__ import annotations

import ast
from .nodewalk import every_node


def string_keys(node) -> tuple[str, ...] | None:
    """The keys of a dict literal whose keys are all string literals (no `**other`); else None."""
    if not isinstance(node, ast.Dict) or not node.keys:
        return None
    keys = tuple(key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None for key in node.keys)
    return None if None in keys else keys


def expanded(function, name: str, keyed: tuple, named: set) -> list:
    """(None, key, fact) for each key of `keyed` ((key, fact) of the literal bound to `name`)
    not already `named` by the call, when `function` binds `name` only there and never changes
    it; [] otherwise (then `**name` may pass anything)."""
    bound = None
    for node in every_node(function):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id == name and string_keys(node.value) is not None and bound is None:
            bound = node.targets[0]
    for node in every_node(function):
        if isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load) and node is not bound:
            return []
        if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.value, ast.Name) and node.value.id == name \
                and (isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load)):
            return []
    return [(None, key, fact) for key, fact in keyed if key not in named]
