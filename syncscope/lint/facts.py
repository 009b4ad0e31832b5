"""Per-function facts for the whole-program pass (wholeprogram.py), read from Python's `ast`.

The rules' walk (analyzer.py) parses only hot functions that mention what a rule looks for; only it knows where a
sync is. This walk is the cheap other half: every function of every file, recording what the whole-program pass needs
to connect them: which functions, methods and properties each calls (where each argument lives), what it returns.

A value is a `Fact`: where it lives (provenance.py), or "derived from parameter p" (slices, arithmetic and tensor
methods keep the parameter's device), or "the result of call #i" (resolved once the callee's summary is known).
Straight-line: the last assignment wins. Recorded: plain tuples, named tuples (records.py), dicts (the lint cache).
"""

from __future__ import annotations

import ast
import sys

from . import provenance as P
from .ast_annotations import annotation_where, decorator_names, dotted, factory_class, scalar_annotation, annotated_one, given_class
from .records import CallRecord
from .vocabulary import (COMBINING_BUILTINS, HOST_DEVICE_KEYWORD, HOST_METHODS, HOST_MODULES, HOST_RESULT_FORMATS, HOST_RESULT_KEYWORD,
                         JOINING_FUNCTIONS, KEYED_READ_METHODS, PY_ATTRS, PY_BUILTINS, PY_METHODS, PY_MODULES, SAME_PLACE_ATTRS,
                         SPLITTING_METHODS, TORCH_FACTORIES, TORCH_HOST_FUNCTIONS, compares_dtypes, decorator_kind,
                         entry_place, factory_place, named_attr_place, pass_through, torch_gives_python)
from .attr_classes import class_field, file_attr_classes, note_class_attr, note_declared, note_module, note_setattr, note_store, note_unwalked
from .carrier_fields import joined_items
from .errorpaths import always_exits
from .field_keys import reads_host_field
from .field_locals import note_local, receiver_parts
from .fact_values import DEVICE_FACT as _DEVICE, HOST_FACT as _HOST, NAMED_LIST_FACT as _NAMED_LIST, PY_FACT as _PY, \
    UNKNOWN_FACT as _UNKNOWN, FUNC, METHOD, PROP, SUPER, Fact, called_receiver, class_receiver, combine as _combine, \
    keep_params_made_host, operate, required_keywords
from .fact_devices import copy_target, device_place
from .numberguards import number_params
from .keyed_args import expanded, string_keys
from .tuple_names import members, note_memo_returns, positional_args, returned, unpack
from .nodewalk import flat_statements, names_bound
from .made_values import host_items_list, joined_tensors, note_return, returned_items
from .registry_fields import module_registries, type_field
from .config_defaults import note as note_config_defaults
from .stubs import note_stubs


class FileFacts:
    """Walks one module. `functions`: qualified name -> facts dict; `classes`: qualified name ->
    {"bases", "props", "fields", "line"}; `exports`: the module's import table (for re-exports)."""

    def __init__(self, module: str, aliases: dict[str, str], hints: P.NameHints, is_cold) -> None:
        self.module = module
        self.aliases = aliases
        self.hints = hints
        self.is_cold = is_cold  # (function name, enclosing classes) -> runs once, not per step
        self.functions: dict[str, dict] = {}
        self.classes: dict[str, dict] = {}
        self.defined: set[str] = set()  # module-level names defined here (functions, classes)
        self.attr_classes: dict[str, set] = {}  # attribute name -> the classes stored into it (attr_classes.py)

    # -- names -------------------------------------------------------------------------
    def qualify(self, local: str) -> str:
        return f"{self.module}.{local}" if self.module else local

    def resolve_name(self, name: str, scope: dict[str, str] | None = None) -> str | None:
        """A dotted name as written -> its qualified name (imports, local definitions)."""
        root, _, rest = name.partition(".")
        if scope and root in scope:
            target = scope[root]
        elif root in self.aliases:
            target = self.aliases[root]
        elif root in self.defined:
            target = self.qualify(root)
        else:
            return None
        return f"{target}.{rest}" if rest else target

    def class_of_annotation(self, node, scope=None) -> str | None:
        """`Foo`, `mod.Foo`, `Optional[Foo]`, `Foo | None`, `"Foo"` -> qualified class name."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.class_of_annotation(node.left, scope) or self.class_of_annotation(node.right, scope)
        if isinstance(node, ast.Subscript):
            head = (dotted(node.value) or "").rsplit(".", 1)[-1]
            if head in ("Optional", "Union", "Annotated"):
                inner = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                for element in inner:
                    found = self.class_of_annotation(element, scope)
                    if found:
                        return found
            return None
        name = dotted(node)
        if not name or name.rsplit(".", 1)[-1] in ("Tensor", "None", "Any"):
            return None
        return self.resolve_name(name, scope)

    # -- module and classes --------------------------------------------------------------
    def run(self, tree: ast.Module) -> None:
        for node in flat_statements(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defined.add(node.name)
        self.registries = module_registries(tree.body, self)  # dicts of classes (registry_fields.py)
        note_module(self, flat_statements(tree.body))
        self.walk_body(tree.body, [], None, {})

    def walk_body(self, body, classes: list[str], outer: "_Scope | None", local_defs: dict[str, str]) -> None:
        """Definitions in a module, class or (for nested ones) function body."""
        for node in flat_statements(body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.function(node, classes, outer)
            elif isinstance(node, ast.ClassDef):
                self.class_def(node, classes, outer, local_defs)

    def class_def(self, node: ast.ClassDef, classes: list[str], outer, local_defs) -> None:
        names = classes + [node.name]
        qualname = self.qualify(".".join(names))
        scope = outer.local_defs if outer else None
        bases = [self.resolve_name(dotted(b), scope) for b in node.bases if dotted(b)]
        self.classes[qualname] = info = {"bases": [b for b in bases if b], "props": {}, "fields": {}, "line": node.lineno}
        note_stubs(info, node)  # methods there to be overridden (stubs.py)
        for item in flat_statements(node.body):
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                field_class = self.class_of_annotation(item.annotation, scope)
                note_declared(self, item.target.id, field_class)
                if field_class:
                    info["fields"][item.target.id] = field_class
                else:
                    class_field(self, info, item.target.id, item.annotation, scope)
            elif isinstance(item, ast.Assign):
                note_class_attr(self, item, scope)
            elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = decorator_names(item)
                if any(d.endswith("property") for d in decorators):  # property, cached_property
                    info["props"][item.name] = f"{qualname}.{item.name}"
        self.walk_body(node.body, names, None, local_defs)  # methods: their own scopes

    # -- functions ---------------------------------------------------------------------
    def function(self, node, classes: list[str], outer: "_Scope | None") -> None:
        decorators = decorator_names(node)
        if any(decorator_kind(d) == "kernel" for d in decorators):  # a Triton/JIT kernel: device code, it cannot sync the host
            note_unwalked(self, node)  # what it stores is of no known class
            return
        if outer is not None and outer.kind == "function":
            local = f"{outer.local}.{node.name}"
        else:
            local = ".".join(classes + [node.name])
        qualname = self.qualify(local)
        args = node.args
        positional = [a.arg for a in args.posonlyargs + args.args]
        keyword_only = [a.arg for a in args.kwonlyargs]
        scope = _Scope(self, qualname, local, classes, outer)
        cls_name = self.qualify(".".join(classes)) if classes else None
        for index, arg in enumerate(args.posonlyargs + args.args + args.kwonlyargs):
            if index == 0 and classes and arg.arg in ("self", "cls"):
                scope.types[arg.arg] = cls_name
                scope.env[arg.arg] = _UNKNOWN
                continue
            where = self.hints.where(arg.arg)
            if arg.annotation is not None:
                ann_where = annotation_where(arg.annotation)
                if ann_where is not None:
                    where = ann_where if where != P.HOST else P.HOST
                else:
                    found = self.class_of_annotation(arg.annotation, scope.local_defs)
                    if found:
                        scope.types[arg.arg] = found
            # a parameter is "whatever the caller passes", unless its name or type says
            scope.env[arg.arg] = (where, None, None) if P.known_host(where) else (where, arg.arg, None)
            if where == P.HOST and self.hints.container_only(arg.arg):
                scope.env[arg.arg] = _NAMED_LIST  # `masks_list`: its items may be anywhere (param_items.py)
        facts = {
            "line": node.lineno,
            "params": positional,
            "required": len(positional) - len(args.defaults),  # leading positional ones the caller must pass
            "kwonly": keyword_only,
            "varargs": args.vararg is not None,
            "varkw": args.kwarg is not None,
            # memoized functions and cached properties run their body too (once per key), so
            # their syncs count for their callers; but they are not where a finding is reported
            "hot": (outer is None or outer.facts.get("hot", True)) and not self.is_cold(node.name, classes)
            and not any(decorator_kind(d) == "memo" for d in decorators),
            "calls": [],
            "returns": [],
            "tuple_returns": [],  # `return a, b`: the facts of each element
            "property": any(d.endswith("property") for d in decorators),
            # `-> float`, `-> int | None`: a Python number; `-> Stage`: the class it returns (fact_values.CALLED)
            "scalar_return": node.returns is not None and scalar_annotation(node.returns),
            "returns_class": self.class_of_annotation(node.returns, scope.local_defs) if annotated_one(node.returns) else None,
            **required_keywords(args), **number_params(args),  # last: the dict is sized for the keys above
        }
        scope.facts = facts
        scope.node = node
        self.functions[qualname] = facts
        # nested definitions are visible by name before the statements that call them
        for inner in flat_statements(node.body):
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                scope.local_defs[inner.name] = self.qualify(f"{local}.{inner.name}")
            elif isinstance(inner, ast.ClassDef):
                scope.local_defs[inner.name] = self.qualify(".".join(classes + [inner.name]))
        scope.block(node.body)
        note_memo_returns(facts, node, scope.tuples)  # `return self._memo[key]` beside `return result`
        note_config_defaults(facts, node)  # switches `__post_init__` settles, devices they pick


class _Scope:
    """One function being walked."""

    def __init__(self, file: FileFacts, qualname: str, local: str, classes: list[str], outer) -> None:
        self.file, self.qualname, self.local, self.classes, self.outer = file, qualname, local, classes, outer
        self.kind = "function"
        self.env: dict[str, Fact] = dict(outer.env) if outer else {}
        # list name -> where items appended to it live (`parts.append(h[a:b])`): what `torch.cat(parts)` makes
        self.items: dict[str, Fact] = {}
        self.keyed: dict[str, tuple] = {}  # name -> ((key, fact), ...) of a dict literal (keyed_args.py)
        self.tuples: dict[str, tuple] = {}  # name -> the facts of the members of a tuple literal (tuple_names.py)
        self.node = None  # the function's own node
        self.types: dict[str, str] = dict(outer.types) if outer else {}
        self.field_locals: dict = {}  # local -> the field read it stands for (field_locals.py)
        self.local_defs: dict[str, str] = dict(outer.local_defs) if outer else {}
        self.facts: dict = {}
        self.stmt = (0, 0)
        self.seen_props: dict = {}  # (receiver, attr) -> the fact of its first read

    # -- statements --------------------------------------------------------------------
    def block(self, body) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.file.function(stmt, self.classes, self)
            return
        if isinstance(stmt, ast.ClassDef):
            self.file.class_def(stmt, self.classes, self, self.local_defs)
            return
        self.stmt = (stmt.lineno, getattr(stmt, "end_lineno", stmt.lineno) or stmt.lineno)
        if isinstance(stmt, ast.Assign):
            keyed = string_keys(stmt.value) if len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) else None
            # `args = {"grid_thw": grid_thw}`: each value's fact, by key (keyed_args.py)
            values = tuple(zip(keyed, map(self.eval, stmt.value.values))) if keyed is not None else None
            parts = members(stmt.value) if len(stmt.targets) == 1 and keyed is None else None
            parts = tuple(map(self.eval, parts)) if parts is not None else None  # `r = (a, b)`, `t, h = int(t), h`
            fact = self.eval(stmt.value) if parts is None and keyed is None else _PY
            for target in stmt.targets:
                unpack(self, target, parts, getattr(stmt.value, "elts", ())) or self.bind(target, fact, stmt.value)
            if keyed is not None:
                self.keyed[stmt.targets[0].id] = values
        elif isinstance(stmt, ast.AnnAssign):
            fact = self.eval(stmt.value) if stmt.value is not None else _UNKNOWN
            if isinstance(stmt.target, ast.Name):
                found = self.file.class_of_annotation(stmt.annotation, self.local_defs)
                if found:
                    self.types[stmt.target.id] = found
                where = annotation_where(stmt.annotation)
                if where is not None and stmt.value is None:
                    fact = (where, None, None)
            elif isinstance(stmt.target, ast.Attribute) and dotted(stmt.target.value) == "self" and self.classes:
                found = self.file.class_of_annotation(stmt.annotation, self.local_defs)
                info = self.file.classes.setdefault(self.file.qualify(".".join(self.classes)),
                                                    {"bases": [], "props": {}, "fields": {}, "line": 0})
                note_declared(self.file, stmt.target.attr, found)
                if found:  # `self.runner: Runner = ...` types the field for every method
                    info["fields"].setdefault(stmt.target.attr, found)
                else:
                    class_field(self.file, info, stmt.target.attr, stmt.annotation, self.local_defs)
            self.bind(stmt.target, fact, stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            fact = _combine([self.eval(stmt.target), self.eval(stmt.value)])
            self.bind(stmt.target, fact, None)
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                elements = returned(self, stmt.value) if len(self.facts["tuple_returns"]) < 8 else None
                if elements is not None:  # `return a, b`, `return result` (tuple_names.py)
                    self.facts["tuple_returns"].append(elements)
                    fact = _combine(list(elements)) if isinstance(stmt.value, ast.Tuple) else self.eval(stmt.value)
                else:  # `return [p]`, a flattener's comprehension: where `p` is (made_values.py)
                    fact = returned_items(self, stmt.value, self.eval(stmt.value))
                if len(self.facts["returns"]) < 8:
                    self.facts["returns"].append(fact)
                note_return(self, stmt.value)  # a platform's pick, a class it builds (made_values.py)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):  # rows of a tensor parameter (`for t, h, w in grid_thw:`):
            rows = self.eval(stmt.iter)  # what callers passed; of a host-only field: host
            row = (rows[0], rows[1], None) if rows[1] is not None and rows[0] == P.TENSOR \
                else _HOST if reads_host_field(stmt.iter, self.file.hints) else _UNKNOWN
            for name in names_bound(stmt.target):
                self.env[name] = row
                self.local_defs.pop(name, None)
            if row is _UNKNOWN:
                self.bind(stmt.target, _UNKNOWN, None)
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.eval(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, _UNKNOWN, None)
            self.block(stmt.body)
        elif isinstance(stmt, ast.If):
            self.eval(stmt.test)
            before = dict(self.env)
            self.block(stmt.body)
            if always_exits(stmt.body):  # only the other path reaches what follows the `if`
                self.env = before
            self.block(stmt.orelse)
            keep_params_made_host(before, self.env)
        elif isinstance(stmt, ast.While):
            self.eval(stmt.test)
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
            self.block(stmt.body)
            for handler in stmt.handlers:
                self.block(handler.body)
            self.block(stmt.orelse)
            self.block(stmt.finalbody)
        elif isinstance(stmt, ast.Match):
            self.eval(stmt.subject)
            for case in stmt.cases:
                self.block(case.body)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:  # a local import binds a module or function here
                if alias.name != "*":
                    local = alias.asname or alias.name.split(".")[0]
                    self.env.pop(local, None)
                    if isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
                        self.local_defs[local] = f"{stmt.module}.{alias.name}"
        else:
            for child in ast.iter_child_nodes(stmt):
                if isinstance(child, ast.expr):
                    self.eval(child)

    def bind(self, target, fact: Fact, value) -> None:
        if isinstance(target, ast.Name):
            name = target.id
            if self.file.hints.overrides(name, fact[0]):
                # a name's own convention wins: `x_cpu = ...` is a host mirror; `x_list = ...` a
                # Python list, whose items may be device tensors (param_items.py)
                fact = _NAMED_LIST if self.file.hints.container_only(name) else _HOST
            note_local(self, name, value)
            self.env[name] = fact
            self.local_defs.pop(name, None)
            self.tuples.pop(name, None)
            if isinstance(value, ast.Call):  # `runner = Runner(...)`: its class types the name
                made = self.file.resolve_name(dotted(value.func) or "", self.local_defs)
                made = factory_class(made)
                if made and made.rsplit(".", 1)[-1][:1].isupper():
                    self.types[name] = made
        elif isinstance(target, (ast.Tuple, ast.List)):
            for position, element in enumerate(target.elts):
                # `a, b = helper(x)`: element k of the call's result (its tuple return decides)
                unpacked = _UNKNOWN if not isinstance(fact[2], int) else (P.UNKNOWN, None, (fact[2], position))
                self.bind(element, unpacked, None)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, fact, None)
        elif isinstance(target, ast.Attribute):
            self.eval(target.value)
            note_store(self, target.attr, value)
            name = dotted(target)
            if name:
                self.env[name] = fact
            if dotted(target.value) == "self" and self.classes:
                # `self.primary = primary` with `primary: AttentionBackend`: the class the field
                # is given (None for any other source); receivers.py reads it to keep a by-name
                # call on the field out of classes an object of that class cannot run
                given = given_class(self, value)
                self.file.classes.setdefault(self.file.qualify(".".join(self.classes)),
                                             {"bases": [], "props": {}, "fields": {}, "line": 0}) \
                    .setdefault("given", {}).setdefault(target.attr, set()).add(given)
            if isinstance(value, (ast.Call, ast.Attribute)) and dotted(target.value) == "self" and self.classes:
                type_field(self, target.attr, value)  # `self.builder = Builder(device)`, `= D[k](config)`, `= c.runner`
        elif isinstance(target, ast.Subscript):
            self.eval(target.value)
            self.eval(target.slice)

    # -- expressions -------------------------------------------------------------------
    def receiver(self, node) -> tuple | None:
        """(class, hops) of an object expression, when its class can be told."""
        if (through := class_receiver(node, self.receiver, self.env)) is not None:  # `type(self.layer)`
            return through
        node, hops = receiver_parts(self, node)  # a local that stands for a field is read as it
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super" and self.classes:
            return self.file.qualify(".".join(self.classes)), (SUPER, *reversed(hops)), False
        if not isinstance(node, ast.Name):  # `self._stage().forward(x)`: by `_stage`'s return annotation
            return called_receiver(node, self.receiver, hops, lambda name: self.file.resolve_name(name, self.local_defs))
        owner = self.types.get(node.id)
        if owner is None and not hops:
            # `Class.method(...)` / `Class.static(...)` called through the class itself
            resolved = self.file.resolve_name(node.id, self.local_defs)
            if resolved and node.id[:1].isupper():
                return resolved, (), True
        if owner is None:
            return None
        return owner, tuple(reversed(hops)), False

    def eval(self, node) -> Fact:
        if node is None or isinstance(node, ast.Constant):
            return _PY
        if isinstance(node, ast.Name):
            found = self.env.get(node.id)
            if found is not None:
                return found
            if node.id in self.file.aliases or node.id in self.local_defs or node.id in self.file.defined:
                return _PY
            where = self.file.hints.where(node.id)
            return _NAMED_LIST if where == P.HOST and self.file.hints.container_only(node.id) else (where, None, None)
        if isinstance(node, ast.Attribute):
            return self.attribute(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):  # `mm_kwargs["image_grid_thw"]`: where the field lives (vocabulary)
            self.eval(node.slice)
            base = self.eval(node.value)
            if isinstance(node.slice, ast.Constant) and entry_place(node.value, node.slice.value, self.file.hints):
                return _HOST  # an item (no slice) of a call's result next: an item of a Python container is no Python value
            return (base[0], base[1], (base[2], -1)) if isinstance(base[2], int) and not isinstance(node.slice, ast.Slice) else base
        if isinstance(node, ast.BinOp):
            return operate([self.eval(node.left), self.eval(node.right)])
        if isinstance(node, ast.UnaryOp):
            fact = self.eval(node.operand)
            return _PY if isinstance(node.op, ast.Not) else fact
        if isinstance(node, ast.Compare):
            facts = [self.eval(node.left)] + [self.eval(c) for c in node.comparators]
            if any(isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in node.ops) or compares_dtypes(
                    self.file.resolve_name(dotted(c) or "", self.local_defs) for c in (node.left, *node.comparators)):
                return _PY  # identity, membership, or a dtype: `x == torch.float8_e4m3fn`
            if any(isinstance(c, ast.JoinedStr) or (isinstance(c, ast.Constant) and isinstance(c.value, (str, bytes)))
                   for c in (node.left, *node.comparators)):
                return _PY  # `self.result == "tensor"`: a string compared
            return operate(facts)
        if isinstance(node, ast.BoolOp):
            return _combine([self.eval(v) for v in node.values])
        if isinstance(node, ast.IfExp):
            self.eval(node.test)
            return _combine([self.eval(node.body), self.eval(node.orelse)])
        if isinstance(node, ast.NamedExpr):
            fact = self.eval(node.value)
            self.bind(node.target, fact, node.value)
            return fact
        if isinstance(node, (ast.Lambda,)):
            return _UNKNOWN
        for child in ast.iter_child_nodes(node):  # comprehensions, containers, f-strings...
            if isinstance(child, ast.expr):
                self.eval(child)
            elif isinstance(child, ast.comprehension):
                self.eval(child.iter)
                for test in child.ifs:
                    self.eval(test)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.JoinedStr, ast.ListComp,
                             ast.SetComp, ast.DictComp)):
            return host_items_list(node, self.eval)  # `[item.tgt_size for item in items]`: host
        return _UNKNOWN

    def attribute(self, node: ast.Attribute) -> Fact:
        name = dotted(node)
        if name is not None:
            found = self.env.get(name)
            if found is not None:
                return found
            root = name.split(".", 1)[0]
            if root not in self.env and root not in self.types and \
                    (root in self.file.aliases or root in self.file.defined or root in self.local_defs):
                return _PY  # a module attribute: `torch.float16`
        receiver = self.eval(node.value)
        attr = node.attr
        if attr in SAME_PLACE_ATTRS:
            return receiver
        if attr in PY_ATTRS or attr.startswith("__"):
            return _PY
        owner = self.receiver(node.value)
        key = (owner, attr) if owner is not None else (dotted(node.value), attr)
        found = self.seen_props.get(key)
        if found is None:  # one read per function is enough to connect it
            self.record((PROP, owner, attr), [(-1, None, receiver)], node, attr)
            # an attribute that is no property of the tree lives where its name says
            found = self.seen_props[key] = (self.file.hints.attr_where(attr), None, len(self.facts["calls"]) - 1)
        return found

    def call(self, node: ast.Call) -> Fact:
        fact = self._call(node)
        if any(isinstance(k.value, ast.Constant) and (k.arg == HOST_RESULT_KEYWORD and k.value.value in HOST_RESULT_FORMATS
               or (k.arg, k.value.value) == HOST_DEVICE_KEYWORD) for k in node.keywords):
            return _HOST  # `processor(image, return_tensors="pt")`: built on the host (vocabulary)
        return fact

    def _call(self, node: ast.Call) -> Fact:
        func = node.func
        note_setattr(self.file, node)
        args = positional_args(self, node.args)  # `f(*row)` of a tuple literal `row`: its members
        args += [(None, k.arg, self.eval(k.value)) for k in node.keywords if k.arg is not None]
        for k in node.keywords:
            if k.arg is None and isinstance(k.value, ast.Name) and k.value.id in self.keyed and self.node is not None:
                args += expanded(self.node, k.value.id, self.keyed[k.value.id], {a[1] for a in args})
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.eval(a.value)
        if isinstance(func, ast.Attribute):
            method = func.attr
            full = dotted(func)
            root = full.split(".", 1)[0] if full else None
            if full and root not in self.env and root not in self.types and \
                    (root in self.file.aliases or root in self.local_defs or root in self.file.defined) \
                    and not (root in self.file.defined and root[:1].isupper()):
                return self.function_call(self.file.resolve_name(full, self.local_defs), args, node)
            receiver = self.eval(func.value)
            if method in ("append", "insert") and isinstance(func.value, ast.Name) and args:
                # a tensor made here without a device (`torch.as_tensor(x)`): host data when x is
                # (`item.grid_thw`, a carrier's host attribute), else the list's name is the evidence
                made = node.args[-1] if node.args else None
                factory = isinstance(made, ast.Call) and (self.file.resolve_name(dotted(made.func) or "", self.local_defs)
                                                          or "").startswith("torch.")
                item = receiver if factory and args[-1][2] != _HOST else args[-1][2]
                known = self.items.get(func.value.id)
                self.items[func.value.id] = item if known is None else _combine([known, item])
            elif method in ("extend", "__iadd__", "__setitem__") and getattr(func.value, "id", None) in self.items:
                self.items[func.value.id] = _UNKNOWN  # items of another source (as list_origins.py)
            if method in HOST_METHODS or (method in KEYED_READ_METHODS and node.args and isinstance(node.args[0], ast.Constant)
                                          and entry_place(func.value, node.args[0].value, self.file.hints)):  # `kwargs.pop("key")`
                return _HOST
            if method in SPLITTING_METHODS and (receiver[1] is not None or receiver[2] is not None
                                                or receiver[0] in (P.HOST, P.TENSOR, P.DEVICE)):
                # `images_crop.split(sizes)` of a tensor (or of what a caller passes): its pieces
                # are where it is; only a string's `.split(",")` gives Python values
                return receiver
            if method in PY_METHODS:
                return _PY
            if method == "cuda":
                return _DEVICE
            if method == "to":
                return copy_target(self, node, receiver)
            owner = self.receiver(func.value)
            if owner is not None:  # the receiver is passed too: position -1 (`self`)
                self.record((METHOD, owner, method), [(-1, None, receiver)] + args, node, method)
                return (P.UNKNOWN, None, len(self.facts["calls"]) - 1)
            # a tensor method (`x.sum()`, `x.view(-1)`) keeps its receiver's device
            return receiver if receiver[0] != P.PY else _UNKNOWN
        if isinstance(func, ast.Name):
            if func.id in self.env:
                return _UNKNOWN  # a local holding a callable
            if func.id in self.local_defs:
                return self.function_call(self.local_defs[func.id], args, node)
            if func.id in COMBINING_BUILTINS and func.id not in self.file.defined:
                return _combine([a[2] for a in args])
            if func.id in PY_BUILTINS and func.id not in self.file.defined:
                return _PY
            if func.id == "getattr" and len(node.args) > 1 and named_attr_place(getattr(node.args[1], "value", None), self.file.hints):
                return _HOST
            return self.function_call(self.file.resolve_name(func.id, self.local_defs), args, node)
        self.eval(func)
        return _UNKNOWN

    def function_call(self, qualname: str | None, args, node: ast.Call) -> Fact:
        if qualname is None:
            return _UNKNOWN
        if qualname.startswith("torch."):
            short = qualname.rsplit(".", 1)[-1]
            if short in TORCH_FACTORIES:
                device = next((k.value for k in node.keywords if k.arg == "device"), None)
                first = next((fact for position, _, fact in args if position == 0), None)
                where = factory_place(short, None if device is None else (device_place(self, device) or P.DEVICE),
                                      None if first is None else first[0])
                if device is None and first is not None and where == first[0]:
                    return first  # `zeros_like(x)`: x's device, whatever x follows
                return (where, None, None)
            if torch_gives_python(qualname):
                return _PY
            if short in TORCH_HOST_FUNCTIONS:
                return _HOST
            device = next((k.value for k in node.keywords if k.arg == "device"), None)
            if device is not None:  # `torch.normal(..., device="cpu")`: where it says (as evaluate.py)
                return (device_place(self, device) or P.DEVICE, None, None)
            items = joined_items(node, self.items, self.eval) if short in JOINING_FUNCTIONS else None
            if items is not None:  # where the joined tensors live, not the list (carrier_fields.joined_items)
                args = [(0, None, items)] + [a for a in args if a[0] != 0]
            joined = _combine([a[2] for a in args]) if args else _UNKNOWN
            return joined_tensors(joined) if short in JOINING_FUNCTIONS else joined  # tensors, not a list
        if qualname.startswith(HOST_MODULES):
            return _HOST
        if pass_through(qualname) is not None:
            return next((fact for position, _, fact in args if position == pass_through(qualname)), _UNKNOWN)
        if qualname.startswith(PY_MODULES):
            return _PY
        last = qualname.rsplit(".", 1)[-1]
        if last.lower().endswith("h2d"):
            return _DEVICE  # `async_tensor_h2d(x_cpu, device)`: a copy to the device (as evaluate.py)
        if last[:1].isupper():
            # a class: calling it runs its __init__ (once per object, not a step's work)
            return _UNKNOWN
        self.record((FUNC, qualname), args, node, last)
        return (P.UNKNOWN, None, len(self.facts["calls"]) - 1)

    def record(self, ref: tuple, args, node, text: str) -> None:
        """A call (or attribute read) to resolve against the tree (records.CallRecord)."""
        packed = tuple((position, keyword, fact) for position, keyword, fact in args)
        self.facts["calls"].append(CallRecord(node.lineno, node.col_offset + 1, *self.stmt, ref, packed, sys.intern(text)))


def file_facts(tree: ast.Module, module: str, aliases: dict[str, str], hints: P.NameHints, is_cold):
    walker = FileFacts(module, aliases, hints, is_cold)
    walker.run(tree)
    return walker.functions, walker.classes, file_attr_classes(walker.attr_classes)
