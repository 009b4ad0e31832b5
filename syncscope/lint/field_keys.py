"""Host-only multimodal fields stored under another key (issue 24, "host data taken for device
data").

A vLLM model often parses its keyword arguments into a typed dict whose keys differ from the
field names: `audio_num_chunks = kwargs.pop("audio_num_chunks")` (a field the processor declares
`keep_on_cpu=True`), then `AudioFeatureInputs(type="audio_features", num_chunks=audio_num_chunks,
token_len=audio_token_len)`, and later `audio_input["num_chunks"].tolist()` in another method.
The key `num_chunks` holds the host-only field, so it is host data wherever the module reads it,
like the field itself (`classinfo.keep_on_cpu_fields`). A key that some construction in the
module fills with anything else (`token_len=audio_token_len`, a field the runner moves to the
device, or a device tensor) is left alone.

A key may also hold a count the parser builds itself on the host: vLLM's MiniCPM-V 4.6 parses
`num_slices_flat = torch.tensor([len(ps) for ps in pixel_values])` into
`MiniCPMVImagePixelInputs(..., num_slices=num_slices_flat)` and reads
`image_input["num_slices"].tolist()` in another method. A torch factory called without `device=`
builds on the host; for `torch.tensor` / `as_tensor` / `asarray` (which keep a tensor's device)
only when the data is a Python list written there or a local only ever bound to one. So a key
every construction fills with such a build (directly or through a local only ever bound to one)
is carried like a host-only field (`_host_built`).
"""

from __future__ import annotations

import ast

from .nodewalk import nodes_breadth_first, every_node


def carried_keys(tree, fields: set[str] | frozenset[str]) -> set[str]:
    """Keys a class of the module is built with (`Inputs(num_chunks=audio_num_chunks)`) that
    every such construction fills with a host-only field: the local named for it, or the field
    read straight from the keyword arguments (`kwargs.pop("audio_num_chunks")`)."""
    carried: set[str] = set()
    other: set[str] = set()
    # one walk of the module for every reading below (a walk of a big model file costs about
    # as much as the rest of this module's work)
    nodes = nodes_breadth_first(tree, _READ)
    assignments = [node for node in nodes if type(node) is not ast.Call]
    # a local named for a field but given something else somewhere in the module
    # (`audio_num_chunks = audio_num_chunks.to(device)`) may be a device copy; a local only ever
    # given a field read (`num_pooled_patches = kwargs.pop("image_num_pooled_patches")`) is the field
    declared = fields
    fields = (set(fields) | _field_locals(assignments, fields)) - _rebound(assignments)
    built = _host_built_locals(assignments)
    for node in nodes:
        if type(node) is not ast.Call or not _class_like(node.func):
            continue
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg in declared:
                continue
            value = keyword.value
            host = _field_value(value, fields) or _host_built(value, built) \
                or (isinstance(value, ast.Name) and value.id in built.get("", ()))
            (carried if host else other).add(keyword.arg)
    return carried - other


_CALL = frozenset({ast.Call})
_READ = frozenset({ast.Call, ast.Assign, ast.AnnAssign, ast.AugAssign})  # what carried_keys reads

_DATA_FACTORIES = frozenset({"tensor", "as_tensor", "asarray"})  # keep the device of a tensor given
_LIST_DISPLAYS = (ast.List, ast.Tuple, ast.ListComp)


def _host_built(value, built) -> bool:
    """`torch.tensor([len(ps) for ps in pixel_values])`, `torch.tensor(sizes)` with `sizes` only
    ever a list display, `torch.zeros(n, dtype=...)`: a torch factory with no `device=` that
    makes a new host tensor."""
    from .vocabulary import TORCH_SIZED_FACTORIES

    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name) and value.func.value.id == "torch"
            and value.func.attr in TORCH_SIZED_FACTORIES and value.func.attr != "frombuffer"):
        return False
    if any(k.arg in ("device", None) for k in value.keywords):
        return False
    if value.func.attr not in _DATA_FACTORIES:
        return True
    data = value.args[0] if value.args else None
    return isinstance(data, _LIST_DISPLAYS) or (isinstance(data, ast.Name) and data.id in built["lists"])


def _bindings(assignments):
    """(assignment, target, name) for each name the module's assignments bind, also inside a
    tuple target."""
    for node in assignments:
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            for name in every_node(target):
                if isinstance(name, ast.Name):
                    yield node, target, name


def _host_built_locals(assignments) -> dict[str, set[str]]:
    """Names every assignment in the module binds to a list display ("lists"), then names every
    assignment binds to a host build ("")."""
    kinds: dict[str, set] = {}
    bindings = list(_bindings(assignments))
    for node, target, name in bindings:
        kinds.setdefault(name.id, set()).add(
            "list" if node.value is not None and target is name and not isinstance(node, ast.AugAssign)
            and isinstance(node.value, _LIST_DISPLAYS) else id(node))
    lists = {name for name, seen in kinds.items() if seen == {"list"}}
    built: dict[str, set[str]] = {"lists": lists, "": set()}
    host: dict[str, set] = {}
    for node, target, name in bindings:
        host.setdefault(name.id, set()).add(
            target is name and isinstance(node, ast.Assign) and _host_built(node.value, built))
    built[""] = {name for name, seen in host.items() if seen == {True}}
    return built


def _class_like(func) -> bool:
    """`AudioInputs(...)`, `schema.AudioInputs(...)`: a class is built (its name is capitalized)."""
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name[:1].isupper()


def _field_value(value, fields) -> bool:
    if isinstance(value, ast.Name):
        return value.id in fields
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("pop", "get") \
            and value.args and isinstance(value.args[0], ast.Constant):
        return value.args[0].value in fields
    return False


def _field_locals(assignments, fields) -> set[str]:
    """Locals that some assignment gives a field read; `_rebound` takes out those also given a
    copy to the device."""
    return {target.id for node in assignments if isinstance(node, ast.Assign) and _field_value(node.value, fields)
            for target in node.targets if isinstance(target, ast.Name)}


def _rebound(assignments) -> set[str]:
    """Names that some assignment gives a value that may live on the device: a `.to(...)` /
    `.cuda()` copy, a call naming `device=` or an `h2d` helper (`async_tensor_h2d(x, dev)`).
    Host and Python rebinds (`image_num_patches = image_num_patches.tolist()`) keep the name."""
    rebound: set[str] = set()
    for node in assignments:
        if isinstance(node, ast.Assign) and _may_be_on_the_device(node.value):
            rebound.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return rebound


def _may_be_on_the_device(value) -> bool:
    for node in nodes_breadth_first(value, _CALL):
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name in ("to", "cuda") or "h2d" in name or "device" in name \
                or any(k.arg == "device" for k in node.keywords):
            return True
    return False


def reads_host_field(node, hints) -> bool:
    """`mm_kwargs["images_spatial_crop"]`, `kwargs.get("num_patches")` or a name for a
    host-only field of this module (`FileNameHints.host_names`): its rows (`for crop in ...:`)
    are host data too. Not any host value: the items of a `_list` may be device tensors."""
    names = getattr(hints, "host_names", None)
    if not names:
        return False
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value in names
    return _field_value(node, names)
