"""What code can hold: the classes its module knows of through imports, either way.

A method call on a receiver of unknown class (`x.generate(...)`) is followed by name
(reachability.py). The object it runs on was built from a class that the two sides of the call
meet on in the import graph:
* the caller's module knows the class or a class of its family (its bases, its subclasses and
  their bases): one of them is defined in a module the caller's module imports, at its top,
  under `if TYPE_CHECKING:`, in a function (a lazy factory), or by a string naming it (a
  registry that `importlib` loads; not a string only compared, `"pkg.x" in sys.modules`:
  imports.loaded_strings), or one that such a module imports, and so on (a
  quantization method built by a config, subclassing the `LinearMethodBase` the layer imports);
  or a module defining a subclass of the caller's class, or constructing it or one (a pipeline
  building its stage and handing it the model it loaded), knows it so;
* or the class's module imports the caller's, transitively (it can hand itself over: a pipeline
  building its stages with `pipeline=self`);
* or no module imports the class's module at all (a model a registry loads by a name it
  builds at run time: any code may hold one).
Otherwise the class is of another program part: a diffusion prompt enhancer's
`self.model.generate(**kwargs)` (a Hugging Face model) is neither a ComfyUI node's `generate`
nor an LLM model's TTS head's, whose modules and the enhancer's never import each other. A
package's `__init__` is not counted for the modules under it (it often imports most of the
tree, lazily); classes outside the tree count as nothing (every class subclasses `object`).
"""

from __future__ import annotations


class ImportClosure:
    """Module -> the in-tree modules it imports, transitively (a bit set over the modules)."""

    def __init__(self, program, imports: dict, bases: dict, subclasses: dict, builders: dict) -> None:
        self.program = program
        self.imports = imports  # module -> the dotted names it imports anywhere (imports.imported_names)
        # class -> its bases as written (loops.py: `AttentionImpl[T]` -> `AttentionImpl`, None
        # where a base does not resolve), and in-tree class -> its direct subclasses (modules.py)
        self.bases = bases
        self.subclasses = subclasses
        self.builders = builders  # in-tree class -> the modules whose code constructs it (loops.py `makes`)
        self._family: dict[str, int] = {}
        self.names = sorted(program.modules)
        self.index = {name: i for i, name in enumerate(self.names)}
        self._closure: list[int] | None = None
        self._imported: set[int] = set()  # the modules some other module imports
        self._graph: list[set[int]] = []  # module number -> the modules it imports
        self._known: dict[str, int] = {}
        self._module_of: dict[str, str | None] = {}

    def bases_of(self, cls: str) -> tuple:
        found = self.bases.get(cls)
        return found if found is not None else tuple(self.program.classes[cls]["bases"])

    def module_of(self, qualname: str) -> str | None:
        """The in-tree module that defines (or is) `qualname`: its longest dotted prefix that
        is a module, also with a namespace package's prefix taken off (program.py)."""
        found = self._module_of.get(qualname, 0)
        if found != 0:
            return found
        found = None
        names = [qualname] + [qualname[len(p) + 1:] for p in self.program.namespaces
                              if qualname.startswith(p + ".")]
        for name in names:
            parts = name.split(".")
            for cut in range(len(parts), 0, -1):
                module = ".".join(parts[:cut])
                if module in self.index:
                    found = module
                    break
            if found is not None:
                break
        self._module_of[qualname] = found
        return found

    def _imports(self, module: str) -> set[int]:
        """The modules `module`'s own code imports (at its top or in a function). Not the
        parent packages Python runs first: what a package's `__init__` imports (often every
        part of the tree, lazily) is not what the module's code was written against."""
        named = set(self.program.modules[module].values()) | set(self.imports.get(module, ()))
        out = {self.index[module]}
        for value in named:
            target = self.module_of(value)
            if target is not None:
                out.add(self.index[target])
        return out

    def _build(self) -> list[int]:
        """Each module's known modules: itself, what it imports, what those import, and so on
        (passes until nothing changes)."""
        graph = [sorted(self._imports(name)) for name in self.names]
        self._graph = [set(edges) for edges in graph]
        self._imported = {j for i, edges in enumerate(graph) for j in edges if j != i}
        known = [1 << i for i in range(len(graph))]
        changed = True
        while changed:
            changed = False
            for i, edges in enumerate(graph):
                bits = known[i]
                for j in edges:
                    bits |= known[j]
                if bits != known[i]:
                    known[i] = bits  # in place: later modules of this pass see it already
                    changed = True
        return known

    def knows(self, module: str | None, cls: str, caller_class: str | None = None) -> bool:
        """May code in `module` (a method of `caller_class`, or a function) run a method of
        class `cls`? The object is of `cls` or of a subclass of it, and that class or one of its
        bases is defined in a module the caller knows of (its module's imports, transitively, or
        those of a module defining a subclass of `caller_class` or constructing one: they fill
        the fields its code calls on); or `cls`'s module imports the caller's (it can hand over
        itself: a pipeline building its stages with `pipeline=self`), transitively. True when unsure: a module
        the tree does not name, a base that does not resolve (a star import's name, a call), or
        a class whose module no module of the tree imports (a model that a registry loads by a
        name it builds: any code may hold one)."""
        at = self.index.get(module) if module is not None else None
        if at is None:
            return True
        if self._closure is None:
            self._closure = self._build()
        owner = self.module_of(cls)
        if owner is not None and owner in self.index:
            if self.index[owner] not in self._imported or self._closure[self.index[owner]] >> at & 1:
                return True
        return bool(self.known(at, caller_class) & self.family(cls))

    def known(self, at: int, caller_class: str | None) -> int:
        """The modules a caller in module number `at` knows of, with those that the modules
        defining its class's subclasses, or constructing it or them, know of (the builder hands
        the object what it holds: a pipeline gives its stage the model it loaded)."""
        if caller_class is None:
            return self._closure[at]
        found = self._known.get(caller_class)
        if found is None:
            found = self._closure[at]
            for cls in self.with_subclasses(caller_class):
                where = self.module_of(cls)
                for module in ([where] if where is not None else []) + list(self.builders.get(cls, ())):
                    if module in self.index:
                        found |= self._closure[self.index[module]]
            self._known[caller_class] = found
        return found

    def with_subclasses(self, cls: str) -> list[str]:
        """`cls` and its subclasses, at any depth, each once."""
        found, pending = [cls], list(self.subclasses.get(cls, ()))
        seen = {cls}
        while pending:
            sub = pending.pop()
            if sub not in seen:
                seen.add(sub)
                found.append(sub)
                pending.extend(self.subclasses.get(sub, ()))
        return found

    def family(self, cls: str) -> int:
        """The modules (a bit set) that define a class an object running `cls`'s methods may be
        named by: `cls`, its subclasses, and all their bases (a mixin's method runs on a model
        class that also subclasses an interface the caller imports); every bit when a base
        does not resolve."""
        found = self._family.get(cls)
        if found is not None:
            return found
        bits, seen = 0, set()
        pending = self.with_subclasses(cls)
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            owner = self.module_of(current)
            if owner is not None and current in self.program.classes:
                bits |= 1 << self.index[owner]
            if current not in self.program.classes:
                continue  # outside the tree: names nothing of it
            for base in self.bases_of(current):
                inner = self.program.chase(base, True) if base else None
                if base is None:
                    bits = -1  # unknown: may be anything
                    break
                if inner is not None:
                    pending.append(inner)
            if bits == -1:
                break
        self._family[cls] = bits
        return bits
