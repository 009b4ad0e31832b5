"""The items of a field declared as a list of a class: a loop over the field gives objects of that
class (or of its subclasses), and the calls made on the loop variable are limited to them.

vLLM 0.33's sampler runs its logits processors in a loop:

    self.logits_processors: list[LogitsProcessor] = [logit_bias_state, ...]   # in __init__
    ...
    for processor in self.logits_processors:
        logits = processor.apply(logits, ctx)

`processor` is a plain local, so the call went by name to every `apply` of the tree it could
bind to: the multimodal input processor's `apply(inputs, timing_ctx)` among them, whose
post-processing of a processor's outputs (a `.cpu()`) then counted as per step. The field's
declaration says what the list holds, as a parameter's annotation says what it is: the call
reaches the methods of that class's family only (receivers.DeclaredReceivers.within, the same
narrowing a field's stored classes give, attr_classes.py).

Per file (`file_element_receivers`, `ast` only), for each method of a module-level class:
the calls `v.m(...)` on a local `v` bound exactly once in the method, by `for v in self.f:`,
where the class declares `f` (in its body, `f: list[C]`, or in a method, `self.f: list[C] =
...`) with one element class `C` (`list`, `List`, `Sequence`, `tuple[C, ...]`, no union) and no
other declaration of `f` in the class says otherwise. Per run (`ElementReceivers.limit`): `C`
chased to its in-tree class, or nothing (a library class says nothing of the tree's methods).

What this does not see: a store of another kind of object into the list (`append` of an object
of no subclass of `C`), which the declaration rules out as a parameter's annotation does.
"""

from __future__ import annotations

import ast
from .nodewalk import every_node

_LISTS = frozenset({"list", "List", "Sequence", "MutableSequence", "tuple", "Tuple"})
_BINDS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith,
          ast.comprehension, ast.ExceptHandler)


def _dotted(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def element_class(annotation) -> str | None:
    """`list[C]`, `List["C"]`, `Sequence[C]`, `tuple[C, ...]` -> "C" as written; None for
    anything else (a union element, a tuple of several types, a bare `list`)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):  # `"list[C]"`
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if not isinstance(annotation, ast.Subscript):
        return None
    head = (_dotted(annotation.value) or "").rsplit(".", 1)[-1]
    if head not in _LISTS:
        return None
    inner = annotation.slice
    if head in ("tuple", "Tuple"):
        if not (isinstance(inner, ast.Tuple) and len(inner.elts) == 2 and isinstance(inner.elts[1], ast.Constant)
                and inner.elts[1].value is Ellipsis):
            return None
        inner = inner.elts[0]
    if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
        try:
            inner = ast.parse(inner.value, mode="eval").body
        except SyntaxError:
            return None
    return _dotted(inner)


def _declared(cls: ast.ClassDef) -> dict[str, str | None]:
    """Field -> its element class as written, from every declaration in the class (None where
    two disagree or one names no single element class)."""
    found: dict[str, str | None] = {}

    def note(name: str, annotation) -> None:
        element = element_class(annotation)
        found[name] = element if found.get(name, element) == element else None

    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            note(stmt.target.id, stmt.annotation)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in every_node(stmt):
                target = getattr(node, "target", None)
                if isinstance(node, ast.AnnAssign) and isinstance(target, ast.Attribute) \
                        and isinstance(target.value, ast.Name) and target.value.id == "self":
                    note(target.attr, node.annotation)
    return found


def _bindings(function) -> dict[str, list]:
    """Local name -> the nodes that bind it in the function (parameters too), nested scopes in."""
    found: dict[str, list] = {}
    args = function.args
    for arg in args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]:
        found.setdefault(arg.arg, []).append(arg)
    for node in every_node(function):
        if isinstance(node, ast.ExceptHandler) and node.name:
            found.setdefault(node.name, []).append(node)
        if isinstance(node, _BINDS) and not isinstance(node, ast.ExceptHandler):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [i.optional_vars for i in node.items if i.optional_vars is not None] \
                if isinstance(node, (ast.With, ast.AsyncWith)) else [node.target]
            for target in targets:
                for part in every_node(target):
                    if isinstance(part, ast.Name):
                        found.setdefault(part.id, []).append(node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                found.setdefault((alias.asname or alias.name).split(".")[0], []).append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not function:
            found.setdefault(node.name, []).append(node)
    return found


def file_element_receivers(tree: ast.Module, module: str | None, aliases: dict) -> dict:
    """{function: ((line, method name, element class qualified as written), ...)}: the calls
    on a loop variable over a field declared as a list of one class (see the module's text)."""
    if not module:
        return {}
    defined = {stmt.name for stmt in tree.body if isinstance(stmt, ast.ClassDef)}

    def qualify(written: str) -> str | None:
        root, _, rest = written.partition(".")
        if root in aliases:
            base = aliases[root]
        elif root in defined:
            base = f"{module}.{root}"
        else:
            return None
        return f"{base}.{rest}" if rest else base

    found: dict[str, tuple] = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        declared = {name: qualify(element) for name, element in _declared(cls).items() if element}
        if not declared:
            continue
        for method in cls.body:
            if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
                continue
            calls = _element_calls(method, method.args.args[0].arg, declared)
            if calls:
                found[f"{module}.{cls.name}.{method.name}"] = calls
    return found


def _element_calls(method, me: str, declared: dict) -> tuple:
    """The calls `v.m(...)` on a local bound only by `for v in self.f:` with `f` declared."""
    bindings = _bindings(method)
    if len(bindings.get(me, ())) != 1:
        return ()
    held: dict[str, str] = {}
    for node in every_node(method):
        if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name) \
                and isinstance(node.iter, ast.Attribute) and isinstance(node.iter.value, ast.Name) \
                and node.iter.value.id == me and declared.get(node.iter.attr) \
                and len(bindings.get(node.target.id, ())) == 1:
            held[node.target.id] = declared[node.iter.attr]
    if not held:
        return ()
    return tuple((node.lineno, node.func.attr, held[node.func.value.id]) for node in every_node(method)
                 if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                 and isinstance(node.func.value, ast.Name) and node.func.value.id in held)


class ElementReceivers:
    """Over the program: (function, line, method name) -> the in-tree class the receiver holds."""

    def __init__(self, program, results: dict) -> None:
        self.program = program
        self._calls: dict[str, dict] = {}
        for result in results.values():
            for function, calls in (getattr(result, "element_calls", None) or {}).items():
                table = self._calls.setdefault(function, {})
                for line, name, written in calls:
                    table.setdefault((line, name), []).append(written)

    def limits(self, caller: str) -> list:
        """[((line, name), (class,))] of the caller's calls on such loop variables whose element
        class is in the tree; one entry per call."""
        out = []
        for key, written in self._calls.get(caller, {}).items():
            for each in written:
                cls = self.program.chase(each, True)
                if cls is not None:
                    out.append((key, (cls,)))
        return out
