"""Extra attributes of carrier objects that the tree moves to the device field by field.

A class that serves undeclared attributes from a mapping (`def __getattr__(self, name): return
self.extra[name]`, filled by `item.set("grid_thw", value)` / `setattr(item, key, value)`) carries
a processor's outputs from where they are made to where a model reads them (`item.grid_thw`,
`getattr(item, "grid_thw", None)`). When the tree moves fields of such objects to the device in
place, one by one (`for item in items: item.feature = item.feature.to(device)`), the objects
arrive with host data: a field nobody moves, and that no code of the tree fills with device
data, is still host data where a model reads it. Which fields are moved, stored or read is
taken from code where the object's class is known: the items a loop, a comprehension or an
index takes from a parameter annotated as a list of the class (`items: List[Item]`), or a
local built by the class's constructor.

Per file (`carrier_facts`, `ast` only): the classes that define `__getattr__` and the fields
they declare; per class name the attributes moved in place, stored with device data, and read
or stored by key; and the classes whose declared fields hold objects of a class (`mm_items:
List[Item]`). Per run (`carrier_host_attrs`): the host attributes of each carrier class that
some file moves, for the modules that import or use that class or import a class holding it
(`inputs.mm_items[0]`); the engine walks those modules again with the attributes as host-only
attribute names (`provenance.FileNameHints.host_attrs`: `x.grid_thw` and `getattr(x,
"grid_thw", None)` on any object there, not a local or parameter of that name). Classes are
matched by their short names, as the other class facts are: a second class of one name can
only add declared or moved fields. An entry read or stored by a constant key off the mapping
`__getattr__` serves from (`item.extra.get("grid_thw")`, `item.extra["grid_thw"] = ...`) is that
attribute (session 10): the mapping's name goes along as "[extra". Not seen: a store under a key
computed at run time (`item.set(attr_name, value)` over a processor's outputs, `self.extra[key] =
...`).
"""

from __future__ import annotations

import ast

from . import provenance as P
from .nodewalk import nodes_breadth_first, every_node

_CONTAINERS = frozenset("List list Sequence Iterable Tuple tuple Set set Collection".split())
_KEYED_SETTERS = frozenset(("set", "__setitem__", "__setattr__"))
MAPPING = "["  # a carrier's mapping (`model_specific_data`) among the ".name" attributes passed on
# the nodes _function reads (Subscript: `item.M["K"]` entries, _mapped)
_READ = frozenset({ast.For, ast.AsyncFor, ast.comprehension, ast.Assign, ast.Call, ast.Attribute, ast.Subscript})


def carrier_facts(tree: ast.Module, text: str) -> dict | None:
    """What this file tells about carrier classes; None when nothing (most files)."""
    classes: dict[str, set] = {}
    if "__getattr__" in text:
        for cls in every_node(tree):
            if isinstance(cls, ast.ClassDef) and any(
                    isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__getattr__" for s in cls.body):
                classes[cls.name] = _declared(cls)
    found: dict[str, dict[str, set]] = {"moved": {}, "device": {}, "keys": {}, "holds": {}, "maps": {}}
    if classes:  # most files have none: no second walk of the module
        for cls in (c for c in every_node(tree) if isinstance(c, ast.ClassDef) and c.name in classes):
            found["maps"][cls.name] = _mappings(cls)
    for function in _functions(tree):
        _function(function, found)
    for cls in (s for s in tree.body if isinstance(s, ast.ClassDef)):
        for item in cls.body:  # `mm_items: List[Item]`: a holder's objects are read off it (`inputs.mm_items[0]`)
            held = _annotated(item.annotation)[0] if isinstance(item, ast.AnnAssign) else None
            if held is not None:
                found["holds"].setdefault(cls.name, set()).add(held)
    if not classes and not any(found.values()):
        return None
    return {"classes": {c: frozenset(d) for c, d in classes.items()},
            **{kind: {c: frozenset(k) for c, k in by.items()} for kind, by in found.items()}}


def _mappings(cls: ast.ClassDef) -> set:
    """The mappings `__getattr__` serves undeclared attributes from: `self.M[name]`,
    `self.M.get(name)`."""
    found = set()
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or method.name != "__getattr__":
            continue
        for node in every_node(method):
            store = node.value if isinstance(node, ast.Subscript) else \
                node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "get" else None
            if isinstance(store, ast.Attribute) and isinstance(store.value, ast.Name) and store.value.id == "self":
                found.add(store.attr)
    return found


def _mapped(node) -> tuple[str, str, str] | None:
    """(object, mapping, key) of an entry read or stored by a constant key off a mapping field
    of a named object: `item.M["K"]`, `item.M.get("K", ...)`; None for anything else. Which
    fields are a carrier's mappings is known per run (`carrier_host_attrs`)."""
    if isinstance(node, ast.Subscript):
        owner, key = node.value, node.slice
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        owner, key = node.func.value, node.args[0]
    else:
        return None
    if isinstance(owner, ast.Attribute) and isinstance(owner.value, ast.Name) \
            and isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.isidentifier():
        return owner.value.id, owner.attr, key.value
    return None


def _functions(tree: ast.Module):
    """The module's functions and the methods of its classes (a nested function is walked with
    the one holding it)."""
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield stmt
        elif isinstance(stmt, ast.ClassDef):
            yield from (s for s in stmt.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)))


def _declared(cls: ast.ClassDef) -> set:
    names = set()
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            names.add(item.target.id)
        elif isinstance(item, ast.Assign):
            names |= {t.id for t in item.targets if isinstance(t, ast.Name)}
        elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(item.name)  # a method or a property: no extra attribute
    return names


def _short(node) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
        return node.value  # a string annotation: `"Item"`
    return None


def _annotated(annotation) -> tuple[str | None, bool]:
    """(class, whether the annotation is a container of it): `Item`, `Optional[Item]`,
    `List[Item]`; None for anything else (unions of several classes, dicts)."""
    if isinstance(annotation, ast.Subscript):
        outer = _short(annotation.value)
        inner = annotation.slice
        if outer == "Optional":
            return _annotated(inner)
        if outer in _CONTAINERS and not isinstance(inner, ast.Tuple):
            cls, nested = _annotated(inner)
            return (cls, True) if cls is not None and not nested else (None, False)
        return None, False
    name = _short(annotation)
    return (name, False) if name and name[:1].isupper() else (None, False)


def _function(function, found: dict) -> None:
    objects: dict[str, str] = {}  # name -> the class of the object it holds
    lists: dict[str, str] = {}  # name -> the class of the items it holds
    args = function.args
    for arg in args.posonlyargs + args.args + args.kwonlyargs:
        if arg.annotation is not None:
            cls, many = _annotated(arg.annotation)
            if cls is not None and many:  # `items: List[Item]` (one object passed alone is not followed)
                lists[arg.arg] = cls
    if not lists and not any(isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
                             and (_short(s.value.func) or "")[:1].isupper() for s in function.body):
        return  # no list of objects and no object built here: most functions, left unwalked
    nodes = nodes_breadth_first(function, _READ)  # in ast.walk's order: the first class seen is kept
    for node in nodes:  # what names hold: items of a typed list, objects a constructor builds
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.target, ast.Name) \
                and isinstance(node.iter, ast.Name) and node.iter.id in lists:
            objects[node.target.id] = lists[node.iter.id]
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value, name = node.value, node.targets[0].id
            if isinstance(value, ast.Call):
                cls = _short(value.func)
                if cls and cls[:1].isupper():  # `item = Item(...)`: a constructor, by its name
                    objects.setdefault(name, cls)
            elif isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id in lists:
                objects.setdefault(name, lists[value.value.id])
    if not objects:
        return
    for node in nodes:
        entry = _mapped(node)
        if entry is not None and entry[0] in objects:  # `item.M["K"]`: the attribute K, once M is the mapping
            found["keys"].setdefault(objects[entry[0]], set()).add(MAPPING + entry[1] + MAPPING + entry[2])
        if isinstance(node, ast.Assign):
            for target in node.targets:
                entry = _mapped(target)
                if entry is not None and entry[0] in objects and _device_value(node.value):
                    found["device"].setdefault(objects[entry[0]], set()).add(MAPPING + entry[1] + MAPPING + entry[2])
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id in objects:
                    _stored(objects[target.value.id], target.attr, node.value, found, target.value.id)
        elif isinstance(node, ast.Call):
            func = node.func
            keyed = None
            if isinstance(func, ast.Attribute) and func.attr in _KEYED_SETTERS and isinstance(func.value, ast.Name) \
                    and func.value.id in objects and len(node.args) == 2:
                keyed = (func.value.id, node.args[0], node.args[1])
            elif isinstance(func, ast.Name) and func.id in ("setattr", "getattr") and len(node.args) >= 2 \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id in objects:
                keyed = (node.args[0].id, node.args[1], node.args[2] if func.id == "setattr" and len(node.args) > 2 else None)
            if keyed is not None and isinstance(keyed[1], ast.Constant) and isinstance(keyed[1].value, str):
                cls = objects[keyed[0]]
                found["keys"].setdefault(cls, set()).add(keyed[1].value)
                if keyed[2] is not None and _device_value(keyed[2]):
                    found["device"].setdefault(cls, set()).add(keyed[1].value)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) \
                and isinstance(node.value, ast.Name) and node.value.id in objects:
            found["keys"].setdefault(objects[node.value.id], set()).add(node.attr)


def _stored(cls: str, attr: str, value, found: dict, owner: str) -> None:
    found["keys"].setdefault(cls, set()).add(attr)
    if not _device_value(value):
        return
    moved = isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
        and value.func.attr in ("to", "cuda") and isinstance(value.func.value, ast.Attribute) \
        and value.func.value.attr == attr and isinstance(value.func.value.value, ast.Name) \
        and value.func.value.value.id == owner
    found["moved" if moved else "device"].setdefault(cls, set()).add(attr)


def _device_value(value) -> bool:
    """Whether a stored value may be device data: a `.cuda()`, a `.to(...)` to anything but
    the CPU, or a call given `device=` anything but the CPU. Anything else (a processor's
    output, a parameter) is no evidence either way."""
    for node in every_node(value):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr == "cuda":
            return True
        if isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            target = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "device"), None)
            if target is not None and not _cpu(target) and not _dtype(target):
                return True
        device = next((k.value for k in node.keywords if k.arg == "device"), None)
        if device is not None and not _cpu(device):
            return True
    return False


def _cpu(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("cpu")


def _dtype(node) -> bool:
    text = ast.unparse(node)
    return "dtype" in text or text.startswith(("torch.float", "torch.int", "torch.bool", "torch.long",
                                               "torch.half", "torch.bfloat", "torch.uint"))


def carrier_host_attrs(facts: dict[str, dict], imported: dict[str, frozenset]) -> dict[str, frozenset[str]]:
    """Module -> the host attributes (each as ".name") it reads off carrier objects: the
    attributes read or stored by key on objects of a class that defines `__getattr__` and whose
    fields some file moves to the device in place, less the fields it declares, those moved
    and those some file stores device data into, for the modules that import that class or a
    class declaring a field of it. `imported`: module -> short names it imports."""
    declared: dict[str, set] = {}
    for file in facts.values():
        for cls, names in file.get("classes", {}).items():
            declared.setdefault(cls, set()).update(names)

    def pooled(kind: str) -> dict[str, set]:
        out: dict[str, set] = {}
        for file in facts.values():
            for cls, names in file.get(kind, {}).items():
                if cls in declared:
                    out.setdefault(cls, set()).update(names)
        return out

    moved, device, keys, maps = pooled("moved"), pooled("device"), pooled("keys"), pooled("maps")
    for by in (device, keys):  # `item.M["K"]` is `item.K` where M is the class's mapping
        for cls, names in by.items():
            entries = [n.split(MAPPING)[1:] for n in names if n.startswith(MAPPING)]
            names -= {MAPPING + m + MAPPING + k for m, k in entries}
            names |= {k for m, k in entries if m in maps.get(cls, ())}
    host: dict[str, frozenset] = {}
    for cls in declared:
        if not moved.get(cls):
            continue
        attrs = keys.get(cls, set()) - declared[cls] - moved[cls] - device.get(cls, set())
        attrs = {a for a in attrs if not a.startswith("_")}
        if attrs:
            host[cls] = frozenset("." + a for a in attrs) | frozenset(MAPPING + m for m in maps.get(cls, ()))
    if not host:
        return {}
    holders: dict[str, set] = {}  # a class whose fields hold carrier objects -> those carriers
    for file in facts.values():
        for holder, held in file.get("holds", {}).items():
            holders.setdefault(holder, set()).update(c for c in held if c in host)
    result: dict[str, frozenset] = {}
    for module, names in imported.items():
        file = facts.get(module) or {}
        used = set(names) | set(file.get("keys", {})) | set(file.get("classes", {}))
        used |= {c for name in names for c in holders.get(name, ())}
        attrs = frozenset().union(*(host[c] for c in used if c in host))
        if attrs:
            result[module] = attrs
    return result


def imported_classes(result) -> tuple:
    """The capitalized short names a file imports (`from m import Carrier`), what
    `carrier_host_attrs` asks of every module: from its facts, or, for a result the cache held
    without them (cache.py), what was kept of them there. A warm run that read `exports` of such a
    result found none, walked the carrier modules again without their attributes and reported
    otherwise than the cold run (SGLang: 24 more findings, 19 of them in the default report)."""
    if not result.has_facts:
        return result.imported_classes
    names = {name.rsplit(".", 1)[-1] for name in (result.exports or {}).values()}
    return tuple(sorted(name for name in names if name[:1].isupper()))


def module_hints(tree, base: P.NameHints, text: str, inherited: frozenset[str]) -> P.NameHints:
    """A module's name hints (worker.file_hints): the project's conventions, plus the fields the
    module declares `keep_on_cpu` or inherits (field_configs.py), plus the carrier attributes the
    engine passes it as ".name" on its second walk (attributes only, not names of the module), and
    the mappings their classes serve them from, as "[name"."""
    if "keep_on_cpu" not in text and not inherited:  # the walk costs as much as a parse: only where it can find some
        return base
    from .classinfo import keep_on_cpu_fields

    names = keep_on_cpu_fields(tree, frozenset(n for n in inherited if not n.startswith((".", MAPPING))))
    attrs = frozenset(n[1:] for n in inherited if n.startswith("."))
    maps = frozenset(n[1:] for n in inherited if n.startswith(MAPPING))
    return P.FileNameHints(base, names, attrs, maps) if names or attrs else base


def joined_items(node: ast.Call, appended: dict, evaluate):
    """The call facts' place of the tensors `torch.cat(...)` joins, when the call says more than
    its list does (facts.py; None otherwise): the items appended to a named list
    (`torch.cat(pruned_states_list)`, not the list's `_list` name), or host data a comprehension
    reads off each item (`torch.cat([item.grid for item in items])`, a carrier's host attribute)."""
    first = node.args[0] if node.args else None
    if isinstance(first, ast.Name) and first.id in appended:
        return appended[first.id]
    if isinstance(first, (ast.ListComp, ast.GeneratorExp)) and isinstance(first.elt, ast.Attribute):
        fact = evaluate(first.elt)
        return fact if fact[0] == P.HOST else None
    return None
