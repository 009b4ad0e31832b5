"""What an attribute name holds across the tree: the classes that every store into it gives.

A method called on a chain of fields whose classes the program cannot tell reaches every method
of that name (reachability.py). SGLang's scheduler frees a rejected request's Mamba slot with
`self.tree_cache.req_to_token_pool.mamba_allocator.free(idx)`: `tree_cache` has no declared
class, so the call reached 36 `free` methods, the host pools' among them. The last field's name
says more than the chain: on CUDA the tree stores `.mamba_allocator` only as an allocator it
constructs (`MultiEndedAllocator(...)`, `MambaSlotAllocator(...)`, a local `slot_allocator =
UnifiedMambaSlotAllocator(...)`), so whatever object the chain went through, the receiver holds
one of those (receivers.py limits the call to them, their subclasses and their MROs).

Per file (facts.py calls `note_store` at each store): attribute name -> the classes its stores
give, with `UNKNOWN` for a store whose class cannot be told: a call's result, a parameter
without an annotation, an unpacking, a loop variable, `setattr(obj, "name", v)`, torch's
`add_module("name", m)`, any store in code the facts walk skips (a kernel, module level). A
parameter annotated with a union gives each of its classes; a local, every construction it is
bound to in the function; `x.a = y.b`, whatever `b` holds (`READ`); a call of a function the
file names (`self.gemm = get_gemm()`, or a local bound to it), the one class that function is
annotated to return (`RETURNS`, looked up over the tree: `-> GemmRsAr`, `-> GemmRsAr | None`;
none, a union of classes, or a function outside the tree: unknown). A literal `None` gives
nothing. Class bodies count too (`allocator: Allocator`, a dataclass field; `name = Cls()`).
Over the tree (`AttributeClasses`): a name is known only when no store is unknown (following the
names it reads from), every class is defined in the tree, and no class has a property of that
name. A name every store of which constructs a library class (`self.inference_runner =
InferenceRunner(config)`, vLLM's Terratorch wrapper) holds no in-tree object (`library_made`):
a construction, unlike a declaration, names the object's own class. Stores in files for another
platform never run on CUDA and are left out. Not seen: a `setattr` whose name is no literal,
`__dict__` writes, attributes a library sets: a receiver filled only that way would be typed
wrongly.
"""

from __future__ import annotations

import ast

from .ast_annotations import dotted, factory_class, union_members
from .nodewalk import every_node

UNKNOWN = "?"  # a store whose class cannot be told
READ = "@"  # prefix: a store of what another attribute name holds (`x.a = y.b`: "@b")
MADE = "!"  # prefix: a class a construction gives (`x.a = Runner(c)`), not one a declaration allows
RETURNS = "^"  # prefix: the function whose annotated return a call gives (`x.a = get_runner()`)
_SETTERS = frozenset({"add_module", "register_module", "register_buffer", "register_parameter"})
# statements that bind a local name (the `with` forms: their `as` targets)
_BINDINGS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith,
             ast.comprehension)


def note_store(scope, attr: str, value) -> None:
    """Record that `<obj>.attr = value` runs in `scope` (a function's scope of facts.py)."""
    if isinstance(value, ast.Constant) and value.value is None:
        return  # `self.pool = None`: holds no object
    scope.file.attr_classes.setdefault(attr, set()).update(_stored_classes(scope, value) or (UNKNOWN,))


def note_declared(file, attr: str, found: str | None) -> None:
    """`attr: T` in a class body (found: T's class, None when it names no one class)."""
    file.attr_classes.setdefault(attr, set()).add(found or UNKNOWN)


def note_unwalked(file, node) -> None:
    """Every attribute store in code the facts walk skips (a function taken for a kernel by its
    decorator, module-level statements): a store of no known class."""
    for inner in every_node(node):
        targets = inner.targets if isinstance(inner, ast.Assign) else \
            [inner.target] if isinstance(inner, (ast.AnnAssign, ast.AugAssign)) else ()
        for target in targets:
            for part in every_node(target):
                if isinstance(part, ast.Attribute) and isinstance(part.ctx, ast.Store):
                    file.attr_classes.setdefault(part.attr, set()).add(UNKNOWN)
        if isinstance(inner, ast.Call):
            note_setattr(file, inner)


def note_module(file, statements) -> None:
    """Module-level statements, which the facts walk does not enter (definitions aside)."""
    for stmt in statements:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            note_unwalked(file, stmt)


def note_class_attr(file, stmt: ast.Assign, scope) -> None:
    """`pool = Pool()` in a class body: a class attribute each object holds until it stores its own."""
    for target in stmt.targets:
        if isinstance(target, ast.Name) and not (isinstance(stmt.value, ast.Constant) and stmt.value.value is None):
            made = _made(file, stmt.value, scope) if isinstance(stmt.value, ast.Call) else None
            file.attr_classes.setdefault(target.id, set()).add(MADE + made if made else UNKNOWN)


def class_field(file, info: dict, attr: str, annotation, scope=None) -> None:
    """`policy: type[AbstractEplbPolicy]`: the field holds a class, so a method called on it
    (`self.policy.rebalance_experts(w)`) is that class's (a classmethod, or an override in
    a subclass: wholeprogram.host_fed). Calling the field itself makes an object and runs
    no `forward`: `class_fields` keeps it out of `Program.module_call`."""
    if isinstance(annotation, ast.Subscript) and (dotted(annotation.value) or "").rsplit(".", 1)[-1] in ("type", "Type"):
        found = file.class_of_annotation(annotation.slice, scope)
        if found:
            info["fields"].setdefault(attr, found)
            info.setdefault("class_fields", []).append(attr)


def note_setattr(file, node: ast.Call) -> None:
    """`setattr(obj, "name", v)`, `object.__setattr__(self, "name", v)`, `self.add_module("name",
    m)` (torch's setters): a store of no known class."""
    func = node.func
    args = node.args
    if isinstance(func, ast.Name) and func.id == "setattr" or isinstance(func, ast.Attribute) and func.attr == "__setattr__":
        args = args[1:]
    elif not (isinstance(func, ast.Attribute) and func.attr in _SETTERS):
        return
    if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
        file.attr_classes.setdefault(args[0].value, set()).add(UNKNOWN)


def _stored_classes(scope, value) -> set | None:
    """The classes `value` may hold, or None when that cannot be told: a parameter by its
    annotation (each class of a union), a local by every binding of it in the function (each a
    construction), a construction, what another attribute name holds."""
    if isinstance(value, ast.Call):
        made = _called(scope.file, value, scope.local_defs)
        return {made} if made else None
    if isinstance(value, ast.Attribute):  # `self.mamba_allocator = self.mamba_pool`: what that name holds
        return {READ + value.attr}
    if not isinstance(value, ast.Name) or scope.node is None:
        return None
    args = scope.node.args
    annotation = next((a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg == value.id), None)
    if annotation is not None:
        members = union_members(annotation)  # each class of a union
        classes = {scope.file.class_of_annotation(part, scope.local_defs) for part in members or ()}
        return None if not classes or None in classes else classes
    if any(a.arg == value.id for a in args.posonlyargs + args.args + args.kwonlyargs) \
            or value.id in (getattr(args.vararg, "arg", None), getattr(args.kwarg, "arg", None)):
        return None  # a parameter without an annotation
    bindings = [node for node in every_node(scope.node) if isinstance(node, _BINDINGS)
                and any(isinstance(t, ast.Name) and t.id == value.id for t in _bound(node))]
    if not bindings or not all(isinstance(b, ast.Assign) and isinstance(b.value, ast.Call) for b in bindings):
        return None  # an unpacking, a loop variable, a `with` target, or a value of no known class
    classes = {_called(scope.file, b.value, scope.local_defs) for b in bindings}
    return None if None in classes else classes


def _bound(node) -> list:
    """The names (and name patterns) a binding statement binds."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension)):
        targets = [node.target]
    else:
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    return [part for target in targets for part in every_node(target)]


def _made(file, call: ast.Call, local_defs) -> str | None:
    """The class a call constructs: `Allocator(...)`, `Allocator.from_config(...)`."""
    made = factory_class(file.resolve_name(dotted(call.func) or "", local_defs))
    return made if made and made.rsplit(".", 1)[-1][:1].isupper() else None


def _called(file, call: ast.Call, local_defs) -> str | None:
    """What a call gives, as recorded: `MADE` + the class it constructs, or `RETURNS` + the
    function it calls (`get_gemm_rs_ar()`, a name the file imports or defines), whose return
    annotation the run reads; None for a call of nothing the file names (a method on `self`)."""
    made = _made(file, call, local_defs)
    if made:
        return MADE + made
    function = file.resolve_name(dotted(call.func) or "", local_defs)
    return RETURNS + function if function else None


def file_attr_classes(table: dict) -> dict:
    """The per-file fact, as recorded in the cache: name -> sorted tuple of classes (UNKNOWN
    among them when a store's class cannot be told)."""
    return {attr: tuple(sorted(classes)) for attr, classes in table.items()}


class AttributeClasses:
    """Attribute name -> the in-tree classes it holds, over the whole program (None: unknown).
    Stores in files for another platform than CUDA never run, and are left out."""

    def __init__(self, program, results, other_platform=None) -> None:
        self.program = program
        self._stored: dict[str, set] = {}
        for path, result in results.items():
            if other_platform is not None and other_platform(path):
                continue
            for attr, classes in (getattr(result, "attr_classes", None) or {}).items():
                self._stored.setdefault(attr, set()).update(classes)
        self._known: dict[str, tuple | None] = {}

    def held(self, attr: str) -> tuple | None:
        found = self._known.get(attr, False)
        if found is False:
            found = self._known[attr] = self._resolve(attr)
        return found

    def _resolve(self, attr: str) -> tuple | None:
        """The classes of every name `attr` reads from (`x.a = y.b`: b's), at any depth, cycles
        included (`x.a = y.a` passes a field along): unknown as soon as one of them is stored
        something of no known class, or nothing in the tree (a library's attribute), or is a
        property (its getter makes what it returns)."""
        classes: set = set()
        pending, seen = [attr], {attr}
        while pending:
            name = pending.pop()
            stored = self._stored.get(name)
            if not stored or UNKNOWN in stored or name in self.program.props_by_name:
                return None
            for each in stored:
                if each.startswith(READ):
                    if each[len(READ):] not in seen:
                        seen.add(each[len(READ):])
                        pending.append(each[len(READ):])
                    continue
                if each.startswith(RETURNS):  # the class the function is annotated to return
                    each = self._returned(each[len(RETURNS):])
                    if each is None:
                        return None
                chased = self.program.chase(each.removeprefix(MADE), True)
                if chased is None:
                    return None
                classes.add(chased)
        return tuple(sorted(classes)) if classes else None

    def _returned(self, function: str) -> str | None:
        """The one class a tree function is annotated to return (`-> GemmRsAr | None`: facts.py
        records none for a union of classes or no annotation); None when it is not told."""
        facts = self.program.functions.get(self.program.chase(function) or "")
        return facts.get("returns_class") if facts else None

    def library_made(self, attr: str) -> bool:
        """Every store into `attr` in the tree constructs a class from outside it (`self.runner =
        InferenceRunner(config)`, a `terratorch` class): the object is that library class
        itself, not an in-tree subclass (a declaration, `runner: Base`, may hold one), so a
        method called on it runs the library's code. Not so where a store is of no known class,
        reads another name, or the name is a property of the tree."""
        stored = self._stored.get(attr)
        if not stored or attr in self.program.props_by_name:
            return False
        return all(each.startswith(MADE) and self.program.chase(each.removeprefix(MADE), True) is None
                   for each in stored)
