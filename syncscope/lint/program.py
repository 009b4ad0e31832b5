"""The linted tree as the whole-program pass sees it: every file's functions, classes, module
exports and sync roots indexed by qualified name, and a call's target resolved through imports,
re-exports, class fields and inheritance (wholeprogram.py runs the summaries over it)."""

from __future__ import annotations

from .field_tables import FieldTables, HeldConditions
from .call_fields import READ_OFF, read_class
from .fact_values import CALLED, FUNC, METHOD, PROP, STAR, SUPER
from .records import Root
from .summaries import accepted_lines
from .switch_devices import switch_field_hints
from .config_defaults import host_device_elements

MAX_ALIAS_HOPS = 6


class Program:
    """The tree's functions and classes, indexed, with call targets resolved."""

    def __init__(self, results: dict) -> None:
        self.functions: dict[str, dict] = {}
        self.path_of: dict[str, str] = {}
        self.classes: dict[str, dict] = {}
        self.modules: dict[str, dict[str, str]] = {}
        self.roots: dict[str, list[tuple[str, Root]]] = {}  # function -> [(path, root)]
        # a file in a directory without `__init__.py` is named from below it (`interface`, as
        # the code that puts that directory on `sys.path` imports it); inside a package the
        # same file also imports through the package (PEP 420 namespace package:
        # `sglang.multimodal_gen.runtime.pipelines_core...` for `pipelines_core...`): those
        # package prefixes, tried when a name does not resolve as it is
        self.namespaces: set[str] = set()
        for path, result in results.items():
            if result.module is not None:
                self.modules.setdefault(result.module, result.exports)
                prefix = _namespace_prefix(path, result.module)
                if prefix:
                    self.namespaces.add(prefix)
            for qualname, facts in result.functions.items():
                if qualname not in self.functions:
                    self.functions[qualname] = facts
                    self.path_of[qualname] = path
            for qualname, info in result.classes.items():
                self.classes.setdefault(qualname, info)
        self.accepted_lines = accepted_lines(results)  # path -> {line: why the code accepts its syncs}
        on_host_fields = host_fields(results)
        held = HeldConditions(results)  # a root that is a sync only where its finding holds
        for path, result in results.items():
            accepted = _accepted_lines(result.suppressions)
            on_host = _on_host_field(result, on_host_fields)
            for qualname, roots in result.roots.items():
                kept = [r for r in roots if not _is_accepted(accepted, r) and (r.code, r.line) not in on_host
                        and held(r.condition)]
                if kept:
                    self.roots.setdefault(qualname, []).extend((path, r) for r in kept)
        # "Class.attr" -> host/Python, for attributes a class fills from host data (classinfo.py)
        self.field_hints: dict[str, int] = {}
        for result in results.values():
            self.field_hints.update(result.field_hints)
        self.field_hints.update(switch_field_hints(results))  # host under the default configuration
        # function -> elements of its returned tuple that name the host's device by default
        self.host_devices = host_device_elements(self.functions)
        self.props_by_name: dict[str, set[str]] = {}
        for info in self.classes.values():
            for attr, getter in info["props"].items():
                self.props_by_name.setdefault(attr, set()).add(getter)
        self._mro_memo: dict[str, list[str]] = {}
        self._subclasses: dict[str, set[str]] | None = None  # base -> its direct subclasses (_family)
        self._field_names: set[str] | None = None  # every class's field names (_mixin_tower)
        self._mixin_subs: dict[str, list[str]] = {}  # class -> its subclasses, sorted (_mixin_tower)

    # -- name resolution ---------------------------------------------------------------
    def chase(self, qualname: str | None, want_class: bool = False, hops: int = 0) -> str | None:
        """A qualified name as imported -> where it is defined in the tree, following
        re-exports (`from .impl import f` in a package's __init__)."""
        if qualname is None or hops > MAX_ALIAS_HOPS:
            return None
        table = self.classes if want_class else self.functions
        if qualname in table:
            return qualname
        for prefix in self.namespaces:
            if qualname.startswith(prefix) and qualname[len(prefix):len(prefix) + 1] == ".":
                found = self.chase(qualname[len(prefix) + 1:], want_class, hops + 1)
                if found is not None:
                    return found
        parts = qualname.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            module = ".".join(parts[:cut])
            aliases = self.modules.get(module)
            if aliases is None:
                continue
            target = aliases.get(parts[cut])
            if target is None or target == qualname:
                return None
            return self.chase(".".join([target] + parts[cut + 1:]), want_class, hops + 1)
        return None

    def mro(self, cls: str) -> list[str]:
        found = self._mro_memo.get(cls)
        if found is not None:
            return found
        order, pending, seen = [], [cls], set()
        while pending and len(order) < 32:
            current = pending.pop(0)
            if current in seen:
                continue
            seen.add(current)
            order.append(current)
            info = self.classes.get(current)
            if info:
                pending.extend(b for b in (self.chase(base, True) for base in info["bases"]) if b)
        self._mro_memo[cls] = order
        return order

    def field_class(self, cls: str, attr: str, depth: int = 0) -> str | None:
        for klass in self.mro(cls):
            info = self.classes.get(klass)
            if info and attr in info["fields"]:
                given = info["fields"][attr]
                if READ_OFF in given:  # `self.f = capture.runner`, `capture = g(...)` (call_fields.py)
                    return read_class(self, given, depth)
                if given.endswith(CALLED) and "." in given:  # `Cls.make(...)`: the class it returns
                    owner, _, method = given[:-len(CALLED)].rpartition(".")
                    owner = self.chase(owner, True)
                    return self.returned_class(owner, method) if owner is not None else None
                return self.chase(given, True)
        return None

    def filled_forward(self, cls: str, attr: str) -> str | None:
        """The `forward` of the class a field filled by a method holds (`method_filled`)."""
        filled = self.method_filled(cls, attr)
        return self.member((filled, (), False), "forward", properties=False) if filled is not None else None

    def method_filled(self, cls: str, attr: str) -> str | None:
        """The class a field filled by a method of the object holds (`self.resampler =
        self.init_resampler()`: made_values.py), resolved in `cls`, the class of the object the
        field is read off (its override). For a submodule's `forward` only (`module_call`): a
        method called on the field keeps its reading (by its name), so that the overrides of
        a class the method is annotated to return stay reached."""
        for klass in self.mro(cls):
            given = (self.classes.get(klass) or {}).get("fields", {}).get(attr)
            if given is not None:
                return self.returned_class(cls, given[:-len(CALLED)]) if given.endswith(CALLED) else None
        return None

    def returned_class(self, cls: str, method: str) -> str | None:
        """The class `cls`'s method `method` is annotated to return (`-> DenoisingStage`), or
        else the one class it builds and returns (made_values.py)."""
        for klass in self.mro(cls):
            facts = self.functions.get(f"{klass}.{method}")
            if facts is not None:
                return self.chase(facts.get("returns_class"), True) or self.chase(facts.get("made_class"), True)
        return None

    def class_of(self, receiver: tuple) -> tuple[str | None, bool]:
        """(class, skip the class itself: `super()`) of a receiver (class, hops, via class)."""
        cls, hops, _ = receiver
        cls = self.chase(cls, True)
        skip_self = False
        for hop in hops:
            if cls is None:
                return None, False
            if hop == SUPER:
                skip_self = True
                continue
            cls = self.returned_class(cls, hop[:-len(CALLED)]) if hop.endswith(CALLED) else self.field_class(cls, hop)
            skip_self = False
        return cls, skip_self

    def given_method(self, ref: tuple) -> str | None:
        """The method a call on a field answers when the field is only ever given parameters
        typed with one in-tree class (`self.metadata_buffers = metadata_buffers` with
        `metadata_buffers: MetadataBuffers`), in the owner's class, its bases and subclasses, and
        no subclass of that class overrides the method: for where its result lives only (the
        call graph keeps its own reading of such calls, receivers.py)."""
        if ref[0] != METHOD:
            return None
        owner, attr = self.field_owner(ref[1])
        if owner is None:
            return None
        given: set = set()
        for cls in self._family(owner):
            given |= ((self.classes.get(cls) or {}).get("given") or {}).get(attr, set())
        if len(given) != 1 or None in given:
            return None
        cls = self.chase(next(iter(given)), True)
        if cls is None or cls not in self.classes:
            return None
        found = next((f"{k}.{ref[2]}" for k in self.mro(cls) if f"{k}.{ref[2]}" in self.functions), None)
        if found is None or any(f"{sub}.{ref[2]}" in self.functions for sub in self._family(cls) - {cls}
                                if cls in self.mro(sub)):
            return None
        return found

    def answering(self, ref: tuple) -> str | None:
        """The function whose summary tells where the result of an unresolved call lives: a
        field's given class's method (`given_method`), or a function a module re-exports whole
        (`star_export`)."""
        return self.star_export(ref[1]) if ref[0] == FUNC else self.given_method(ref)

    def star_export(self, qualname: str, hops: int = 0) -> str | None:
        """`sglang.srt.utils.flatten_nested_list` where `sglang/srt/utils/__init__.py` says `from
        sglang.srt.utils.common import *`: the function of that name in the tree of one of the
        modules it re-exports whole (imports.with_star_sources), also through a module that
        imports the name from there; for where the call's result lives only, as `given_method`
        (the call graph keeps no edge for it)."""
        module, _, name = qualname.rpartition(".")
        aliases = self.modules.get(module) if module and hops <= MAX_ALIAS_HOPS else None
        if aliases is None:
            return None
        target = aliases.get(name)
        if target is not None:
            return None if target == qualname else self.chase(target) or self.star_export(target, hops + 1)
        for source in aliases.get(STAR, "").split():
            found = self.chase(f"{source}.{name}") or self.star_export(f"{source}.{name}", hops + 1)
            if found is not None:
                return found
        return None

    def _family(self, cls: str) -> set[str]:
        """A class, its bases and its subclasses in the tree."""
        if self._subclasses is None:
            self._subclasses = {}
            for name, info in self.classes.items():
                for base in info["bases"]:
                    chased = self.chase(base, True)
                    if chased:
                        self._subclasses.setdefault(chased, set()).add(name)
        found, pending = set(self.mro(cls)), [cls]
        while pending:
            for sub in self._subclasses.get(pending.pop(), ()):
                if sub not in found:
                    found.add(sub)
                    pending.append(sub)
        return found

    def declared_class(self, receiver: tuple) -> str | None:
        """The class a receiver is declared as, by its qualified name as written, also where the
        tree does not define it (`self.base_layer: nn.Module` -> `torch.nn.Module`): the
        parameter's or the last field's annotation, or the constructor that fills the field."""
        cls, hops, _ = receiver
        if not hops:
            return cls
        owner, skip_self = self.class_of((cls, hops[:-1], False))
        if owner is None or hops[-1] == SUPER:
            return None
        for klass in self.mro(owner)[1 if skip_self else 0:]:
            info = self.classes.get(klass)
            if info and hops[-1] in info["fields"]:
                return info["fields"][hops[-1]]
        return None

    def field_owner(self, receiver: tuple) -> tuple[str | None, str | None]:
        """(the class that holds the field, the field's name) of a receiver read off a field
        (`self.primary`), or (None, None)."""
        cls, hops, _ = receiver
        if not hops or hops[-1] == SUPER:
            return None, None
        owner, _ = self.class_of((cls, hops[:-1], False))
        return owner, (hops[-1] if owner is not None else None)

    def member(self, receiver: tuple, name: str, properties: bool) -> str | None:
        cls, skip_self = self.class_of(receiver)
        if cls is None:
            return None
        for klass in self.mro(cls)[1 if skip_self else 0:]:
            info = self.classes.get(klass)
            if properties:
                if info and name in info["props"]:
                    return info["props"][name]
            elif f"{klass}.{name}" in self.functions:
                return f"{klass}.{name}"
        return None

    def field_where(self, ref: tuple) -> int | None:
        """Where a plain attribute read (`self.out_cpu`, `batch.counts`) lives, when its
        class fills it from host data in one of its methods."""
        if ref[0] != PROP or ref[1] is None:
            return None
        cls, _ = self.class_of(ref[1])
        for klass in self.mro(cls) if cls else ():
            found = self.field_hints.get(f"{klass.rsplit('.', 1)[-1]}.{ref[2]}")
            if found is not None:
                return found
        return None

    def resolve(self, ref: tuple) -> str | None:
        kind = ref[0]
        if kind == FUNC:
            return self.chase(ref[1])
        if kind == METHOD:
            return self.member(ref[1], ref[2], properties=False)
        if kind == PROP:
            if ref[1] is not None:
                found = self.member(ref[1], ref[2], properties=True)
                if found is not None or self.class_of(ref[1])[0] is not None:
                    return found  # a known class without that property: a plain attribute
            getters = self.props_by_name.get(ref[2])
            if getters and len(getters) == 1:  # the only property of that name in the tree
                return next(iter(getters))
        return None

    def module_call(self, ref: tuple, caller: str | None = None) -> str | None:
        """`self.visual(pixel_values, grid_thw=grid_thw)`: calling a submodule held in a field
        (typed by its annotation or the constructor that fills it) runs its `forward`. In a
        method of a class that keeps no such field (a mixin), the `forward` of the class that a
        subclass running that method (`caller`, inherited) keeps there (subclass_towers.py adds
        the other subclasses')."""
        if ref[0] != METHOD:
            return None
        cls, hops, via_class = ref[1]
        owner = self.class_of((cls, hops, via_class))[0]
        if owner is not None and any(ref[2] in self.classes.get(k, {}).get("class_fields", ()) for k in self.mro(owner)):
            return None  # `self.policy(...)` with `policy: type[P]`: it makes an object
        found = self.member((cls, (*hops, ref[2]), via_class), "forward", properties=False)
        if found is None and owner is not None:
            found = self.filled_forward(owner, ref[2])
        if found is None and caller is not None and owner is not None and not hops and not via_class:
            found = self._mixin_tower(owner, ref[2], caller)
        return found

    def _mixin_tower(self, owner: str, attr: str, caller: str) -> str | None:
        if self._field_names is None:
            self._field_names = {a for info in self.classes.values() for a in info["fields"]}
        if attr not in self._field_names or self.field_class(owner, attr) is not None:
            return None
        name, subs = caller.rpartition(".")[2], self._mixin_subs.get(owner)
        if subs is None:
            subs = self._mixin_subs[owner] = sorted(self._family(owner).difference(self.mro(owner)))
        for sub in subs:
            if next((f"{k}.{name}" for k in self.mro(sub) if f"{k}.{name}" in self.functions), None) == caller:
                found = self.member((sub, (attr,), False), "forward", properties=False) or self.filled_forward(sub, attr)
                if found is not None:
                    return found
        return None

    def all_params(self, target: str) -> list[str]:
        """A function's parameters a call can pass: the positional ones, then the keyword-only."""
        facts = self.functions[target]
        return [*facts["params"], *facts.get("kwonly", ())]

    def shift(self, ref: tuple, target: str) -> int:
        """How many leading parameters the call passes implicitly (`self`, `cls`)."""
        params = self.functions[target]["params"]
        first = params[0] if params else None
        if ref[0] == METHOD:
            via_class = ref[1][2]
            if first == "self":
                return 0 if via_class else 1
            return 1 if first == "cls" else 0
        if ref[0] == FUNC:
            return 1 if first == "cls" else 0
        return len(params)  # a property read passes only `self`


def module_prefix(qualname: str, program: Program) -> str:
    parts = qualname.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        if ".".join(parts[:cut]) in program.modules:
            return ".".join(parts[:cut]) + "."
    return ""


def host_fields(results: dict) -> set[str]:
    """"Class.attr" that some file's class keeps on the host or as a Python value and no file's
    class keeps on the device (the engine drops a finding on such a read: engine.py)."""
    tables = FieldTables()
    for result in results.values():
        tables.add_field_hints(result)
    return tables.host_fields(results)


def _on_host_field(result, host_fields: set) -> set[tuple]:
    """(code, line) of the file's findings on a read of such a field: `repeat_interleave(x,
    verify_input.draft_token_num)` with `draft_token_num: int` declared in another module. The
    report drops them; their roots go too, or every caller would still be told the callee syncs."""
    return {(f.code, f.line) for f in getattr(result, "findings", ()) or ()
            if getattr(f, "field", None) and "%s.%s" % f.field in host_fields}


def _accepted_lines(suppressions: dict) -> dict[int, list]:
    """Suppressions with a reason: a root they cover is accepted for every caller too."""
    return {line: [s for s in items if getattr(s, "reason", "")] for line, items in (suppressions or {}).items()}


def _namespace_prefix(path: str, module: str) -> str | None:
    """`sglang.multimodal_gen.runtime` for `sglang/multimodal_gen/runtime/pipelines_core/x.py`
    named `pipelines_core.x`: the directories above the file's module name, when there are."""
    stem = path[:-3] if path.endswith(".py") else path
    dotted = stem.replace("\\", "/").replace("/", ".")
    if dotted.endswith(".__init__"):
        dotted = dotted[:-len(".__init__")]
    if dotted == module or not dotted.endswith("." + module):
        return None
    return dotted[:-len(module) - 1]


def _is_accepted(accepted: dict, root: Root) -> bool:
    for at in {root.line, root.stmt_start, root.stmt_end}:
        for suppression in accepted.get(at, ()):
            if suppression.covers(root.code):
                return True
    return False
