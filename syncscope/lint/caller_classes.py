"""The class of a private function's parameter, from what its callers in the module pass.

    def _apply_metadata_gate(polls, decode_reqs, metadata_buffers):       # no annotation
        room = metadata_buffers.bootstrap_room[i, 0].item()

    def poll_and_all_reduce(..., metadata_buffers: Optional[MetadataBuffers] = None):
        if metadata_buffers is not None:
            _apply_metadata_gate(polls, decode_reqs, metadata_buffers)

(SGLang's PD-disaggregation polling.) The fact: a module-level function whose name starts with
`_` is the module's own helper; when every call of it in the module passes, for a parameter the
helper does not annotate, a parameter of the calling function annotated with one class (`C`,
`Optional[C]`, `C | None`, `"C"`), the helper's parameter holds a `C` (or None). A read of
`param.attr` is then a read of the field `C.attr`, as it is for an annotated parameter, and the
run drops it where the tree keeps that field on the host (program.host_fields:
`MetadataBuffers.bootstrap_room`, on the host's device unless an environment switch the tree
declares off is on: switch_devices.py).

Conservative: any other use of the helper's name in the module (passed as a callback, named in
a string such as `__all__`), a call with `*args` / `**kwargs`, an argument that is anything but
such an annotated parameter, two classes, or no call at all leaves the parameter of unknown
class. Read from the file's `ast`, once per file and only when a finding asks (the table is
kept on the tree object the walk already holds).
"""

from __future__ import annotations

import ast

from .ast_annotations import annotation_shape
from .nodewalk import own_nodes, every_node
from .vocabulary import annotation_place

_NOT_CLASSES = frozenset("Tensor Optional Union List Dict Tuple Set Any Callable Type Sequence Mapping".split())
_CALL = frozenset({ast.Call})
_TABLE = "_syncscope_caller_classes"  # the attribute the table is kept in on the file's tree


def caller_class(tree, function: str, param: str) -> str | None:
    """The short class name every call of the module's private function `function` passes for
    `param`; None when not known."""
    if tree is None or not function.startswith("_") or "." in function:
        return None
    table = getattr(tree, _TABLE, None)
    if table is None:
        table = _classes(tree)
        setattr(tree, _TABLE, table)
    return table.get((function, param))


def _class_of(annotation) -> str | None:
    if annotation is None:
        return None
    name = annotation_place(annotation, annotation_shape)[1]
    if not name:
        return None
    short = name.rsplit(".", 1)[-1]
    return short if short[:1].isupper() and short not in _NOT_CLASSES else None


def _params(function) -> list:
    args = function.args
    return [*args.posonlyargs, *args.args]


def _classes(tree: ast.Module) -> dict:
    helpers = {stmt.name: stmt for stmt in tree.body
               if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name.startswith("_")}
    if not helpers:
        return {}
    unannotated = {name: [a.arg for a in _params(fn) if a.annotation is None] for name, fn in helpers.items()}
    found: dict[tuple, set] = {}
    spoiled: set[str] = set()
    calls: set[int] = set()  # ids of the Name nodes that are a call's function
    for node in every_node(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in helpers:
            spoiled.add(node.value)  # `__all__`, getattr(module, "_f")
    for caller in every_node(tree):
        if not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        annotated = {a.arg: _class_of(a.annotation)
                     for a in (*_params(caller), *caller.args.kwonlyargs)}
        # its own calls, not those of a function or class nested in it (whose names are its own)
        for node in own_nodes(caller.body, _CALL, enter_block_definitions=False):
            if not (isinstance(node.func, ast.Name) and node.func.id in helpers):
                continue
            name = node.func.id
            calls.add(id(node.func))
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                spoiled.add(name)
                continue
            positional = [a.arg for a in _params(helpers[name])]
            passed = {positional[i]: arg for i, arg in enumerate(node.args) if i < len(positional)}
            passed.update({k.arg: k.value for k in node.keywords})
            for param in unannotated[name]:
                arg = passed.get(param)
                cls = annotated.get(arg.id) if isinstance(arg, ast.Name) else None
                found.setdefault((name, param), set()).add(cls)
    for node in every_node(tree):  # a use of the name that is no call (a callback) may pass anything
        if isinstance(node, ast.Name) and node.id in helpers and id(node) not in calls:
            spoiled.add(node.id)
    return {key: next(iter(classes)) for key, classes in found.items()
            if key[0] not in spoiled and len(classes) == 1 and None not in classes}
