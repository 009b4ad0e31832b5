"""A submodule picked from a module's dict of classes (issue 24, "host data taken for device
data").

    _ADAPTERS = {"pixel_shuffle": PixelShuffleAdapter, "patch_merger": PatchMergerAdapter}

    class Tower(nn.Module):
        def __init__(self, config):
            adapter_cls = _ADAPTERS.get(config.adapter_type)
            self.adapter = adapter_cls(config)
        def forward(self, x, meta):
            return self.adapter(x, meta.grid_thw_cpu)       # a host tensor

`self.adapter` holds an object of one of the dict's classes, so calling it runs the `forward` of
one of them, which then gets what the call passes. The field names no single class, so before
this no call in the tree fed `PixelShuffleAdapter.forward`, and a parameter nothing feeds keeps
its findings (`int(grid_h)` of rows of the host grid). The fact, about code: a field filled by
calling a value looked up in a module-level dict literal whose values are all classes (`D[k]`,
`D.get(k)`, directly or through a local bound once to the lookup) holds an object of one of
those classes. facts.py records the classes per field (`picks`); the whole-program pass adds, for
each call of such a field, an edge to each class's `forward` for where parameters' data comes
from only (`Solver.module_edges`, as a typed field's call is): a sync inside that `forward` is
still reported where it is written.
"""

from __future__ import annotations

import ast

from .ast_annotations import dotted, factory_class
from .call_fields import read_field
from .fact_values import CALLED, METHOD
from .made_values import method_field
from .nodewalk import every_node


def module_registries(body, file) -> dict[str, tuple[str, ...]]:
    """name -> the classes of a module-level dict literal whose values are all classes."""
    found: dict[str, tuple[str, ...]] = {}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            name, value = stmt.target.id, stmt.value
        else:
            continue
        if not isinstance(value, ast.Dict) or not value.values or None in value.keys:
            continue
        classes = [file.resolve_name(dotted(v) or "") for v in value.values]
        if all(c and c.rsplit(".", 1)[-1][:1].isupper() for c in classes):
            found[name] = tuple(dict.fromkeys(classes))
    return found


def _lookup(node, registries: dict) -> tuple | None:
    """The classes `D[k]` or `D.get(k)` may give, for a registry `D`."""
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        return registries.get(node.value.id)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and isinstance(node.func.value, ast.Name) and node.args:
        return registries.get(node.func.value.id)
    return None


def type_field(scope, attr: str, value) -> None:
    """`self.builder = Builder(device)` (no annotation): the class types the field; `self.meta =
    Meta.make(...)`: the class that static or class method returns (Program.field_class); `self.adapter
    = adapter_cls(config)` of a registry lookup: the field holds one of its classes (`picks`);
    `self.resampler = self.init_resampler(...)`: what that method returns (made_values.py);
    `self.runner = capture.runner`: the field declared in what `capture`'s call returns (call_fields.py)."""
    if isinstance(value, ast.Attribute):  # `self.runner = capture.runner` (call_fields.py)
        if (read := read_field(scope, value)) is not None:
            scope.file.classes.setdefault(scope.file.qualify(".".join(scope.classes)),
                                          {"bases": [], "props": {}, "fields": {}, "line": 0})["fields"].setdefault(attr, read)
        return
    made = factory_class(scope.file.resolve_name(dotted(value.func) or "", scope.local_defs))
    if made and _class_method(value, made):
        made += CALLED  # `Cls.make(...)`: the class that method returns (Program.field_class)
    if made and (made.rsplit(".", 1)[-1][:1].isupper() or made.endswith(CALLED)):
        scope.file.classes.setdefault(scope.file.qualify(".".join(scope.classes)),
                                      {"bases": [], "props": {}, "fields": {}, "line": 0})["fields"].setdefault(attr, made)
    elif not method_field(scope, attr, value) and (classes := picked_classes(scope, value)) is not None:
        scope.file.classes.setdefault(scope.file.qualify(".".join(scope.classes)),
                                      {"bases": [], "props": {}, "fields": {}, "line": 0}) \
            .setdefault("picks", {})[attr] = classes


def _class_method(value: ast.Call, made: str) -> bool:
    """`Cls.make(...)`, `mod.Cls.make(...)`: a method called on a class by its name (a static or
    class method; `LoRAKernelMeta.make(max_loras, ...) -> "LoRAKernelMeta"`)."""
    func = value.func
    parts = made.rsplit(".", 2)
    return isinstance(func, ast.Attribute) and isinstance(func.value, (ast.Name, ast.Attribute)) \
        and len(parts) > 1 and parts[-2][:1].isupper() and not parts[-1][:1].isupper()


def picked_classes(scope, value: ast.Call) -> tuple | None:
    """The classes a field filled with `value` may hold: `D[k](...)`, `D.get(k)(...)`, or
    `cls(...)` with `cls` bound once in the function, to such a lookup."""
    registries = scope.file.registries
    if not registries:
        return None
    func = value.func
    if not isinstance(func, ast.Name):
        return _lookup(func, registries)
    if scope.node is None:
        return None
    bound = [node.value for node in every_node(scope.node) if isinstance(node, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == func.id for t in node.targets)]
    return _lookup(bound[0], registries) if len(bound) == 1 else None


def add_picked_forwards(solver) -> None:
    """Add to `solver.module_edges`, for each `self.field(...)` call of a field that holds one of
    a registry's classes, the `forward` of each of them."""
    program = solver.program
    owners = {cls: info["picks"] for cls, info in program.classes.items() if info.get("picks")}
    if not owners:
        return
    subclasses: dict[str, list[str]] = {}
    for klass in program.classes:
        for base in program.mro(klass):
            if base in owners:
                subclasses.setdefault(klass, []).append(base)
    for klass, bases in subclasses.items():
        picks = {attr: classes for base in bases for attr, classes in owners[base].items()}
        for caller in solver._methods_of(klass):
            for call in program.functions[caller]["calls"]:
                ref = call.target
                if ref[0] != METHOD or ref[1][1] or ref[1][2] or ref[2] not in picks:
                    continue
                added = solver.module_edges.setdefault(caller, [])
                for cls in picks[ref[2]]:
                    target = next((f"{k}.forward" for k in program.mro(program.chase(cls, True) or cls)
                                   if f"{k}.forward" in program.functions), None)
                    if target is not None and not any(c is call and t == target for c, t, _ in added):
                        added.append((call, target, program.shift(ref, target)))
