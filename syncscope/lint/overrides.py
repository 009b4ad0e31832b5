"""Virtual dispatch: the overrides a method call on a base-typed receiver may run.

The whole-program pass resolves `backend.forward_decode(...)` with `backend: AttentionBackend`
(a parameter's annotation, a field's, a class named by a constructor, `self` in a base class)
to the first class in the receiver's MRO that defines the method: the base's. At run time the
object is one of its subclasses, and the method that runs is that subclass's override. Per-step
reachability (reachability.py) follows these overrides too, but only where the base method is a
stub: its body is a docstring, `pass`, `...`, `return` / `return None`, or `raise
NotImplementedError`, or it is an `@abstractmethod`. Such a base method cannot be what runs on
a serving step, so the call means "whichever subclass this is". A base method with a real body
(a default most subclasses keep) is followed as before, alone: fanning out from every typed
call would send `self.helper()` in each base class into every subclass's `helper`, and an
object built by its own constructor (`runner = Runner(...)`) is exactly that class.

Only calls through an object are widened: `Base.method(self)` names its target, and
`super().method()` skips the class it is written in.
"""

from __future__ import annotations

from .facts import METHOD, SUPER

MAX_OVERRIDES = 200  # a stub overridden by more classes than this is too generic to follow


class Overrides:
    """The program's classes by ancestor, and the overrides of a stub a typed call reaches."""

    def __init__(self, program) -> None:
        self.program = program
        # class -> its proper subclasses defined in the program, at any depth
        self.subclasses: dict[str, list[str]] = {}
        for cls in program.classes:
            for ancestor in program.mro(cls)[1:]:
                self.subclasses.setdefault(ancestor, []).append(cls)
        self._memo: dict[tuple[str, str], tuple[str, ...]] = {}

    def of_call(self, call, target: str) -> tuple[str, ...]:
        """The overrides (qualified names) a resolved method call may run besides `target`."""
        ref = call.target
        if ref[0] != METHOD:
            return ()
        _cls, hops, via_class = ref[1]
        if via_class or SUPER in hops:
            return ()
        facts = self.program.functions.get(target)
        if facts is None or not facts.get("stub"):
            return ()
        receiver, _ = self.program.class_of(ref[1])
        if receiver is None:
            return ()
        key = (receiver, ref[2])
        found = self._memo.get(key)
        if found is None:
            found = tuple(sorted(f"{sub}.{ref[2]}" for sub in self.subclasses.get(receiver, ())
                                 if f"{sub}.{ref[2]}" in self.program.functions and f"{sub}.{ref[2]}" != target))
            if len(found) > MAX_OVERRIDES:
                found = ()
            self._memo[key] = found
        return found
