"""Where a class keeps its attributes, read off the class's own code with `ast` (cheap).

Serving code fills host mirrors in one method and reads them in another:
`self._has_fault = has_fault.to("cpu", non_blocking=True)` in one place, `self._has_fault.item()`
in another. Each function is analyzed alone, so without this the read looks like a device
tensor. Only evidence for the host is collected (that is what removes false alarms); an
attribute also assigned from something device-like gets no hint.
"""

from __future__ import annotations

import ast
import weakref

from . import provenance as P
from .nodewalk import nodes_breadth_first, own_nodes
from .vocabulary import HOST_RESULT_METHODS, HOST_RESULT_WORDS, PLAIN_VALUE_TYPES, TORCH_SIZED_FACTORIES


def class_hints(tree: ast.Module) -> dict[tuple[str, str], int]:
    evidence: dict[tuple[str, str], set[int]] = {}
    appended: set[tuple[str, str]] = set()  # list fields given a device tensor by `self.f.append(...)`
    bound: set[tuple[str, str]] = set()  # fields bound to anything but an empty list or None
    for node in _classes(tree):
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                where = _from_annotation(item.annotation)
                if where is not None:
                    evidence.setdefault((node.name, item.target.id), set()).add(where)
            elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                local: dict[str, P.Place] = {}  # locals known to hold host data, in order
                # parameters annotated with a plain value type (`draft_token_num: int = None`):
                # `self.draft_token_num = draft_token_num` holds a Python number, as the same
                # annotation on the class body would say, until the method rebinds the name
                plain = _plain_parameters(item)
                for target, value, annotation in assignments(item):
                    if isinstance(target, ast.Name):
                        plain.discard(target.id)
                        made = _from_value(value) if value is not None else None
                        if made is None and value is not None:
                            made = _from_host_local(value, local)
                        if made == P.HOST:
                            local[target.id] = P.HOST
                        else:
                            local.pop(target.id, None)
                    elif _is_self_attribute(target):
                        where = _from_annotation(annotation) if annotation is not None else None
                        if where is None and isinstance(value, ast.Name) and value.id in plain:
                            where = P.PY
                        if where is None and value is not None:
                            where = _from_value(value) or _from_host_local(value, local)
                        if where is not None:
                            evidence.setdefault((node.name, target.attr), set()).add(where)
                        if not _empty_list(value):
                            bound.add((node.name, target.attr))
                _device_appends(node.name, item, appended, bound)
    # a Python list of device tensors: no host data, whatever its name says (`_device_appends`)
    hints = {key: P.UNKNOWN for key in appended - bound if evidence.get(key, set()) <= {P.DEVICE}
             and P.CONTAINER_WORDS.intersection(key[1].lower().split("_"))}
    for key, wheres in evidence.items():
        if P.DEVICE in wheres or P.TENSOR in wheres:
            continue
        if P.HOST in wheres:
            hints[key] = P.HOST
        elif wheres == {P.PY}:
            hints[key] = P.PY
    return hints


def assignments(function):
    """(target, value, annotation) for every target of every `x = value` and `x: T = value` in a
    method, in source order, nested blocks and closures included; `value` is None for a bare
    annotation. The one walk behind `self_assignments` and the class hints (which also follow
    the host locals that a `self.attr = local` reads, so they need the Name targets in order)."""
    for stmt in function_statements(function):
        if isinstance(stmt, ast.Assign):
            targets, value, annotation = stmt.targets, stmt.value, None
        elif isinstance(stmt, ast.AnnAssign):
            targets, value, annotation = [stmt.target], stmt.value, stmt.annotation
        else:
            continue
        for target in targets:
            yield target, value, annotation


def self_assignments(function):
    """(attribute, value, annotation) for every `self.attr = value` and `self.attr: T = value` in
    a method, nested blocks and closures included (owner_fields reads it)."""
    for target, value, annotation in assignments(function):
        if _is_self_attribute(target):
            yield target.attr, value, annotation


def _is_self_attribute(target: ast.AST) -> bool:
    return isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"


def _statements(body: list, into_classes: bool = False) -> list:
    """Every statement in `body` in source order, nested blocks and closures included; the
    bodies of nested classes only with `into_classes` (in a method they belong to another
    object's `self`). Statements only: walking every expression node as well (`ast.walk`) made
    this a quarter of a cold lint run. A list built by plain recursion: nested generators cost
    a frame switch per statement and level."""
    found: list = []

    def collect(block: list) -> None:
        for stmt in block:
            found.append(stmt)
            if type(stmt) is ast.ClassDef and not into_classes:
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if type(inner) is list:
                    collect(inner)
            for handler in getattr(stmt, "handlers", ()):
                collect(handler.body)
            for case in getattr(stmt, "cases", ()):
                collect(case.body)
    collect(body)
    return found


# function -> its statements (`_statements` of its body): six per-file facts read them
_function_statements: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def function_statements(function) -> list:
    """Every statement of a function's body, closures included, nested classes' bodies not."""
    found = _function_statements.get(function)
    if found is None:
        found = _function_statements[function] = _statements(function.body)
    return found


# module -> every statement in it, in source order: five per-file facts read them all, and the walk
# is as costly as what they do with it
_module_statements: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def module_statements(tree: ast.Module) -> list:
    """Every statement of the module at any depth (functions, branches, classes), in source order."""
    found = _module_statements.get(tree)
    if found is None:
        found = _module_statements[tree] = _statements(tree.body, into_classes=True)
    return found


def _classes(tree: ast.Module):
    """Every class defined in the module, at any depth (in functions, branches, other classes)."""
    return (stmt for stmt in module_statements(tree) if isinstance(stmt, ast.ClassDef))


def _plain_parameters(function) -> set[str]:
    """The parameters of `function` annotated with a Python scalar type (`n: int`, `scale: float`,
    `Optional[int]`); not a container (`List[torch.Tensor]` holds tensors)."""
    args = function.args
    found = set()
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if arg.annotation is None:
            continue
        text = ast.unparse(arg.annotation).replace("typing.", "").replace(" ", "")
        if text.startswith("Optional[") and text.endswith("]"):
            text = text[len("Optional["):-1]
        if text.removesuffix("|None") in _SCALAR_TYPES:
            found.add(arg.arg)
    return found


_SCALAR_TYPES = frozenset(("int", "float", "bool", "str"))


def _from_annotation(node: ast.AST) -> P.Place | None:
    text = ast.unparse(node)
    if "ndarray" in text or "NDArray" in text:
        return P.HOST
    head = text.split("[", 1)[0].split(".")[-1].strip()
    if head in PLAIN_VALUE_TYPES:
        return P.PY
    return None  # `torch.Tensor` says nothing about the device


def _from_host_local(node: ast.AST, local: dict[str, P.Place]) -> P.Place | None:
    """A value read out of a local that holds host data: `df[df["Model"] == "GPT-4"]`,
    `frame.sample(n)`, `arr.T` stay on the host (`self.data = gpt4_df` after `df =
    pd.read_csv(...)`). A copy to the device is `_from_value`'s to tell, before this."""
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Call)):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Attribute):
                return None  # `f(df)`: what a function returns is not known here
            if node.func.attr in ("to", "cuda", "copy_"):
                return None  # `arr.to(dev)`: a copy that may go to the device
            node = node.func.value
        else:
            node = node.value
    if isinstance(node, ast.Name):
        return local.get(node.id)
    return None


def _empty_list(node) -> bool:
    """`[]`, `None`, `[] if enabled else None`: a binding that puts no item in the field."""
    if isinstance(node, ast.IfExp):
        return _empty_list(node.body) and _empty_list(node.orelse)
    if isinstance(node, ast.List):
        return not node.elts
    return isinstance(node, ast.Constant) and node.value is None


def _device_appends(klass: str, method, appended: set, other: set) -> None:
    """A field bound only to an empty list (or None) holds what its class appends to it:
    `self.flush_list = []` and `self.flush_list.append(torch.zeros(n, device=self.device))`
    make `self.flush_list[i]` a device tensor, whatever its name says (`_list` names a Python
    list, not where its items live: provenance.CONTAINER_WORDS), so `self.flush_list[i].copy_(
    dev)` is no device->host copy. Such a field (`appended`) gets the hint UNKNOWN, not DEVICE:
    the list itself is a Python value (`if self.flush_list:` reads no GPU value). A field given
    any other item (another append, `extend`, `insert`, ...) goes into `other`: no hint. Only a
    name with a container word gets it: another name (`bufs`) says nothing anyway."""
    for stmt in function_statements(method):
        if type(stmt) is ast.AugAssign and _is_self_attribute(stmt.target):  # `self.f += [...]`
            other.add((klass, stmt.target.attr))
        if type(stmt) is ast.Assign:  # `self.f[i] = x`
            other.update((klass, t.value.attr) for t in stmt.targets
                         if type(t) is ast.Subscript and _is_self_attribute(t.value))
        if type(stmt) is not ast.Expr or type(stmt.value) is not ast.Call:
            continue
        func = stmt.value.func
        if type(func) is not ast.Attribute or not _is_self_attribute(func.value):
            continue
        key = (klass, func.value.attr)
        args = stmt.value.args
        if func.attr == "append" and len(args) == 1 and _from_value(args[0]) == P.DEVICE:
            appended.add(key)
        elif func.attr in _ADDING:
            other.add(key)


_ADDING = frozenset("append extend insert __iadd__ __setitem__".split())


def _from_value(node: ast.AST) -> P.Place | None:
    if isinstance(node, ast.Constant):
        return None  # `self.x = None` in a constructor says nothing
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    words = name.lower().strip("_").split("_")
    if words[-1] in HOST_RESULT_WORDS or "to_np" in name or "to_cpu" in name:
        return P.HOST  # `async_copy_to_np(...)`: named for what it returns
    if isinstance(func, ast.Attribute):
        if func.attr in HOST_RESULT_METHODS:
            return P.HOST
        if func.attr in ("to", "cuda"):
            target = keywords.get("device") or (node.args[0] if node.args else None)
            if isinstance(target, ast.Constant) and isinstance(target.value, str):
                return P.HOST if target.value.startswith("cpu") else P.DEVICE
            return P.DEVICE if func.attr == "cuda" or "device" in ast.unparse(target or func) else None
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in ("np", "numpy", "pd", "pandas"):
            return P.HOST  # numpy arrays, pandas frames
        if isinstance(root, ast.Name) and root.id == "torch":
            if "device" in keywords:
                device = keywords["device"]
                if isinstance(device, ast.Constant) and str(device.value).startswith("cpu"):
                    return P.HOST
                return P.DEVICE
            pinned = keywords.get("pin_memory")
            if isinstance(pinned, ast.Constant) and pinned.value is True:
                return P.HOST
    return None


def keep_on_cpu_fields(tree, inherited: frozenset[str] = frozenset(), refills: bool = True) -> frozenset[str]:
    """Names of the fields a module declares host-only: `image_grid_thw=
    MultiModalFieldConfig.batched("image", keep_on_cpu=True)` (a keyword of a call, vLLM's
    `dict(...)` of field configs), `"image_grid_thw": MultiModalFieldConfig...(keep_on_cpu=True)`
    (a dict literal) or `fields["image_grid_thw"] = MultiModalFieldConfig...(keep_on_cpu=True)`. The processor builds them on the host and the runner leaves them there.
    `inherited`: those another module's processor declares for this one (field_configs.py);
    `refills=False`: as declared, before taking out those the module refills on the device."""

    def host_only(value) -> bool:
        return isinstance(value, ast.Call) and any(
            k.arg == "keep_on_cpu" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in value.keywords)

    names = declared_fields(tree, host_only)
    names |= inherited
    if not refills:
        return frozenset(names)
    if not names:
        return frozenset()
    from . import field_refills
    from .field_keys import carried_keys

    refilled = _refilled_on_the_device(tree, names, field_refills.FOUND)
    if not field_refills.KEEP:
        names -= refilled

    return frozenset(names | carried_keys(tree, names))


_DECLARING = frozenset({ast.Call, ast.Dict, ast.Assign, ast.For})  # where declared_fields finds a field config


def declared_fields(tree, is_config) -> set[str]:
    """Names of the fields a module gives a field config `is_config` accepts: as a keyword of a
    call (vLLM's `dict(image_grid_thw=MultiModalFieldConfig.batched("image"), ...)`), as a key of a
    dict literal, or one key at a time (`fields["video_audio_seg_lens"] = MultiModalFieldConfig...`,
    vLLM's MiMo-V2-Omni), also for each key of a loop over a literal of names (`for key in
    ("video_frame_counts", ...): fields[key] = MultiModalFieldConfig...`)."""
    names: set[str] = set()
    for node in own_nodes(tree.body, _DECLARING, skip=frozenset()):  # the whole module, nested code too
        if isinstance(node, ast.Call):
            names.update(k.arg for k in node.keywords if k.arg and is_config(k.value))
        elif isinstance(node, ast.Dict):
            names.update(k.value for k, v in zip(node.keys, node.values)
                         if isinstance(k, ast.Constant) and isinstance(k.value, str) and is_config(v))
        elif isinstance(node, ast.Assign) and is_config(node.value):
            names.update(t.slice.value for t in node.targets if isinstance(t, ast.Subscript)
                         and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str))
        elif isinstance(node, ast.For):
            names.update(_looped_keys(node, is_config))
    return names


def _looped_keys(loop: ast.For, is_config) -> list[str]:
    """The names of `for key in ("a", "b"): fields[key] = <config>`: every string of the literal
    the loop walks, when its body gives `fields[key]` a config."""
    if not isinstance(loop.target, ast.Name) or not isinstance(loop.iter, (ast.Tuple, ast.List)) \
            or not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in loop.iter.elts):
        return []
    key = loop.target.id
    if not any(isinstance(stmt, ast.Assign) and is_config(stmt.value) and any(
            isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Name) and t.slice.id == key for t in stmt.targets)
            for stmt in loop.body):
        return []
    return [e.value for e in loop.iter.elts]


_FUNCTIONS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef})
_REFILLING = frozenset({ast.Dict, ast.Call, ast.Assign})  # where _refilled_on_the_device finds a key refilled


def _refilled_on_the_device(tree, names: set[str], where: dict | None = None) -> set[str]:
    """The declared host-only fields the module itself refills with device data under the same
    key: vLLM's Kimi-VL selects items for its encoder CUDA graph as `{"image_grid_hws":
    selected_grid}` with `selected_grid = torch.tensor(..., device=pixel_values.device)`, so a
    read of that key may see either; such a field is not host data anywhere in the module. A
    refill built on the device of the field it refills stays where the field is. `where`: field
    -> the names of the functions refilling it, filled in."""
    from .field_refills import on_the_fields_device, single_assignments

    refilled: set[str] = set()
    for function in nodes_breadth_first(tree, _FUNCTIONS):
        here: set[str] = set()
        local: dict[str, object] = {}
        for stmt in function_statements(function):
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                local[stmt.targets[0].id] = _literal_or_value(stmt.value)
        once: list = []  # the locals bound once, read only for a refill that looks device-built

        def device(value) -> bool:
            if isinstance(value, ast.Name):
                built = local.get(value.id) == P.DEVICE
            else:
                built = _literal_or_value(value) == P.DEVICE
            if not built:
                return False
            if not once:
                once.append(single_assignments(function_statements(function)))
            # built where the field it refills is (field_refills.py): no device refill
            return not on_the_fields_device(value, once[0], names)

        for node in nodes_breadth_first(function, _REFILLING):
            if isinstance(node, ast.Dict):
                here.update(k.value for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)
                                and k.value in names and device(v))
            elif isinstance(node, ast.Call):
                here.update(k.arg for k in node.keywords if k.arg in names and device(k.value))
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
                key = node.targets[0].slice
                if isinstance(key, ast.Constant) and key.value in names and device(node.value):
                    here.add(key.value)
        refilled |= here
        for name in here if where is not None else ():
            where.setdefault(name, set()).add(function.name)
    return refilled


VECTOR = "1d"  # the marker `attribute_places` adds to a name whose device tensors are all 1-D


def attribute_places(tree: ast.Module) -> dict[str, frozenset]:
    """Attribute name -> the places this file stores into it (`obj.attr = value`, any object),
    as far as one assignment shows: DEVICE for a torch factory with a device or `.to(device)` /
    `.cuda()`, HOST for host data, PY for literals and plain containers. The run keeps, across
    all files, the names only ever given device tensors (field_tables.py's `device_attributes`):
    a rule may report a value read from such an attribute (`RawFinding.needs_device`)."""
    places: dict[str, set[int]] = {}
    for stmt in module_statements(tree):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _constructor_fields(stmt, places)
            continue
        if isinstance(stmt, ast.ClassDef):
            for item in stmt.body:  # `num_tokens: np.ndarray` declared in a class body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) \
                        and "Tensor" not in ast.unparse(item.annotation):  # `List[torch.Tensor]`: no place
                    where = _from_annotation(item.annotation)
                    if where is not None:
                        places.setdefault(item.target.id, set()).add(where)
            continue
        if isinstance(stmt, ast.Assign):
            targets, value, annotation = stmt.targets, stmt.value, None
        elif isinstance(stmt, ast.AnnAssign):
            targets, value, annotation = [stmt.target], stmt.value, stmt.annotation
        else:
            continue
        for target in targets:
            if not isinstance(target, ast.Attribute):
                continue
            where = _from_annotation(annotation) if annotation is not None else None
            if where is None and value is not None:
                where = _literal_or_value(value)
            if where is not None:
                places.setdefault(target.attr, set()).add(where)
                if where == P.DEVICE:
                    places[target.attr].add(VECTOR if _one_dimensional(value) else "nd")
    return {name: frozenset(wheres) for name, wheres in places.items()}


def _one_dimensional(node) -> bool:
    """`torch.zeros((n + 1,), device=d)`, `torch.full((n,), -1, device=d)`, `torch.arange(n,
    device=d)`, `... if flag else None`: a 1-D tensor, where a Python number stored at any
    single index is a one-element store (it waits: docs/sync-forms.md)."""
    if isinstance(node, ast.IfExp):
        branches = [b for b in (node.body, node.orelse) if not (isinstance(b, ast.Constant) and b.value is None)]
        return bool(branches) and all(_one_dimensional(b) for b in branches)
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in TORCH_SIZED_FACTORIES):
        return False
    if node.func.attr == "arange":
        return True
    size = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "size"), None)
    if isinstance(size, ast.Tuple):
        return len(size.elts) == 1 and not isinstance(size.elts[0], ast.Starred)
    sizes = len(node.args) - (1 if node.func.attr == "full" else 0)  # `full(size, fill_value)`
    return isinstance(size, (ast.BinOp, ast.Constant)) and sizes == 1


def _constructor_fields(function, places: dict[str, set[int]]) -> None:
    """`self.State(conv=conv_state, temporal=temporal_state)`: a keyword of a class's constructor
    fills the field of that name, with what the local name was assigned in this function; so
    does `req.kv.track_buffer = buf` with `buf = torch.full((n,), -1, device=d)` above it."""
    local: dict[str, set] | None = None
    for stmt in function_statements(function):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        value = getattr(stmt, "value", None)
        if isinstance(stmt, ast.Assign) and isinstance(value, ast.Name):
            for target in stmt.targets:
                if isinstance(target, ast.Attribute):
                    local = local_places(function) if local is None else local
                    add_place(places.setdefault(target.attr, set()), value, local)
                    if not places[target.attr]:
                        del places[target.attr]
        if not isinstance(value, ast.Call):
            continue
        name = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
        if not name[:1].isupper():
            continue  # a class, by Python's naming convention
        for keyword in value.keywords:
            if keyword.arg is None:
                continue
            local = local_places(function) if local is None else local
            found: set = set()
            add_place(found, keyword.value, local)
            if found:
                places.setdefault(keyword.arg, set()).update(found)


def local_places(function) -> dict[str, set]:
    """Local name -> the places it is assigned in this function, with the 1-D marker of its
    device tensors (`add_place`)."""
    local: dict[str, set] = {}
    for stmt in function_statements(function):
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    add_place(local.setdefault(target.id, set()), stmt.value)
    return local


def add_place(into: set, value, local: dict | None = None) -> None:
    """Add the place one assigned value shows (a local name: what it was assigned), and for a
    device tensor whether it is 1-D (VECTOR) or not."""
    if isinstance(value, ast.Name):
        into.update(local.get(value.id, ()) if local is not None else ())
        return
    where = _literal_or_value(value)
    if where is not None:
        into.add(where)
        if where == P.DEVICE:
            into.add(VECTOR if _one_dimensional(value) else "nd")


def _literal_or_value(node: ast.AST) -> int | None:
    if isinstance(node, ast.ListComp) and _from_value(node.elt) == P.DEVICE:
        return P.DEVICE  # `[torch.zeros(s, device=d) for s in shapes]`: `conv[i]` is a device tensor
    if isinstance(node, ast.IfExp):  # `torch.zeros(n, device=d) if enabled else None`
        branches = [_literal_or_value(b) for b in (node.body, node.orelse)]
        known = {w for w in branches if w is not None}
        return known.pop() if len(known) == 1 else (P.UNKNOWN if known else None)
    if isinstance(node, ast.BinOp) and isinstance(node.left, (ast.List, ast.Tuple)):
        return P.PY  # `[0] * n`
    if isinstance(node, (ast.List, ast.Dict, ast.Set, ast.Tuple, ast.ListComp, ast.DictComp, ast.SetComp,
                         ast.JoinedStr)):
        return P.PY
    if isinstance(node, ast.Constant):
        return None if node.value is None else P.PY
    where = _from_value(node)
    if where is None and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" \
            and node.func.attr in TORCH_SIZED_FACTORIES:
        return P.HOST  # a torch factory without `device=`: built on the host
    return where
