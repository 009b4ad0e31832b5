"""What a receiver of unknown class may hold, by its declaration: the limits on the methods a call
by name reaches (reachability.py's `calls_of`).

A method called on a receiver whose class the program does not state (`self.impl.forward(x)`)
reaches every method of that name the caller's imports can meet. Five facts narrow that:
- a receiver whose declared class has only a stub of the method (stubs.py: `allocator.free(x)`,
  `allocator` a field declared `BaseTokenToKVPoolAllocator`, whose `free` raises
  NotImplementedError) holds an object of that class's family, which runs an override;
- a receiver declared as `nn.Module` itself (modules.py `declared_module`) holds only classes
  that may be modules;
- a field its class, bases and subclasses only ever give parameters typed with in-tree classes
  (`self.primary = primary`, `primary: AttentionBackend`; facts.py records each such source as
  `given`) holds only objects of those classes or their subclasses. SGLang's
  `self.req_to_metadata_buffer_idx_allocator.free(idx)`, given only a `ReqToMetadataIdxAllocator`,
  reached every `free` of the tree, the host pools' too, whose `.cpu()` of their own host indices
  it reported per step;
- failing that, a field whose name the whole tree only ever stores objects of known in-tree
  classes into (`<chain>.mamba_allocator`, whatever the chain went through) holds only those
  classes or their subclasses (attr_classes.py); one the tree only ever stores constructions of
  library classes into (`self.inference_runner = InferenceRunner(config)`, vLLM's Terratorch
  wrapper, a `terratorch` class) holds none of the tree's (`LIBRARY`): its
  `self.inference_runner.forward(**kwargs)` reached every in-tree `forward` it could bind to;
- a loop variable over a field its class declares as a list of one class (`for processor in
  self.logits_processors:`, `logits_processors: list[LogitsProcessor]`) holds objects of that
  class or its subclasses (element_receivers.py).
"""

from __future__ import annotations

from .fact_values import METHOD
from .stubs import stub_methods

MODULE = "module"  # a receiver declared as `nn.Module`
LIBRARY = "library"  # a receiver only ever given constructions of library classes


class DeclaredReceivers:
    """The declared receivers of one per-step walk (reachability.PerStep), each answer kept."""

    def __init__(self, program, kinds, dispatch: dict, attributes=None, elements=None) -> None:
        self.program, self.kinds, self.dispatch = program, kinds, dispatch
        self.attributes = attributes  # attr_classes.AttributeClasses: what a field's name holds
        self.elements = elements  # element_receivers.ElementReceivers: a declared list's items
        self.stubs = stub_methods(program)
        self._limits: dict[str, dict] = {}
        self._families: dict[tuple, frozenset] = {}

    def limits(self, caller: str) -> dict:
        """(line, name) -> what the receiver may hold (MODULE, or a tuple of classes), for the
        method calls `caller` makes by name on a receiver whose declaration says more than
        nothing. A line that also holds a call of that name on another receiver is left out
        (every call dispatched by that name on the line must be one of them)."""
        found = self._limits.get(caller)
        if found is None:
            limits: dict[tuple, list] = {}
            for call in self.program.functions[caller]["calls"]:
                if call.target[0] == METHOD:
                    receiver = call.target[1]
                    limit = MODULE if self.kinds.declared_module(receiver) else \
                        self.declared(receiver, call.name) or self.given(receiver) or self.named(receiver)
                    if limit is not None:
                        limits.setdefault((call.line, call.name), []).append(limit)
            for key, held in self.elements.limits(caller) if self.elements is not None else ():
                if not any(self.kinds.protocol(cls) for cls in held):
                    limits.setdefault(key, []).append(held)
            dispatched: dict[tuple, int] = {}
            for line, name, _op, _shape in self.dispatch.get(caller, ()):
                dispatched[(line, name)] = dispatched.get((line, name), 0) + 1
            found = self._limits[caller] = {
                key: each[0] for key, each in limits.items() if dispatched.get(key) == len(each) and len(set(each)) == 1}
        return found

    def declared(self, receiver: tuple, name: str) -> tuple | None:
        """The class a receiver is declared with, when its method of that name is a stub
        (stubs.py): the call runs an override in that class's family."""
        cls, skip_self = self.program.class_of(receiver)
        if cls is None or skip_self:
            return None
        method = self.program.member((cls, (), False), name, properties=False)
        return (cls,) if method is not None and method in self.stubs else None

    def given(self, receiver: tuple) -> tuple | None:
        """The in-tree classes a field is given (`self.primary = primary`, `primary:
        AttentionBackend`) in its class, its bases and its subclasses, when every assignment to
        it is of a parameter typed with one; None otherwise, or when one is a Protocol (a class
        may match it without inheriting it)."""
        owner, field = self.program.field_owner(receiver)
        if owner is None:
            return None
        given: set = set()
        for cls in set(self.program.mro(owner)) | self._subclasses((owner,)):
            info = self.program.classes.get(cls)
            given |= ((info or {}).get("given") or {}).get(field, set())
        if not given or None in given:
            return None
        chased = tuple(sorted(self.program.chase(name, True) or "" for name in given))
        if "" in chased or any(self.kinds.protocol(cls) for cls in chased):
            return None
        return chased

    def named(self, receiver: tuple) -> tuple | None:
        """The in-tree classes every store into a field of the receiver's last name gives
        (`<chain>.mamba_allocator`: attr_classes.py), when the chain's own classes say nothing;
        None when a store's class is unknown or one is a Protocol."""
        hops = receiver[1] if receiver else ()
        if self.attributes is None or not hops or not isinstance(hops[-1], str):
            return None
        held = self.attributes.held(hops[-1])
        if held is None:
            return LIBRARY if self.attributes.library_made(hops[-1]) else None
        if any(self.kinds.protocol(cls) for cls in held):
            return None
        return held

    def within(self, limit, target: str) -> bool:
        """May a receiver so declared hold an object that runs `target`? MODULE: only a class
        that may be a module. A tuple of classes: a per-request entry (a method of a class known
        not to be a module) only in one of those classes or their subclasses; any other method
        in a class such an object may run it from: theirs, their subclasses' and every class on
        those classes' MROs (a mixin beside the declared class)."""
        owner = target.rpartition(".")[0]
        if limit == LIBRARY:
            return False  # a library object runs the library's methods, none of the tree's
        if limit == MODULE:
            return self.kinds.family_may_be_module(owner)
        if self.kinds.request_entry(target):
            mro = self.program.mro(owner)
            return any(cls in mro for cls in limit)
        found = self._families.get(limit)
        if found is None:
            found = self._families[limit] = frozenset(k for cls in self._subclasses(limit) for k in self.program.mro(cls))
        return owner in found

    def _subclasses(self, classes: tuple) -> set:
        """`classes` and their in-tree subclasses, at any depth."""
        pending, found = list(classes), set()
        while pending:
            current = pending.pop()
            if current not in found:
                found.add(current)
                pending.extend(self.kinds.subclasses.get(current, ()))
        return found
