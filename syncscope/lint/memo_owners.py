"""How long the owner of a memo lives, told by where the tree builds it (memo.py asks).

A memo on `self` fills once per object (memo.py): `if end is None or loc is None: end =
int(self.end.item()); ...; self.end_int = end`. memo.py makes the fill cold where the object
serves steps (a module, a metadata builder). A plain object (a dataclass holding a KV cache's
tensors and the host mirrors of its cursors) lives across steps too when every place the tree
builds one runs once: a function named like code that runs once (`skip-functions`:
`_allocate_causal_kv_cache`, `init_*`, `load_*`; not the per-step exceptions such as
`init_forward_metadata`), a module- or class-level statement (import time), or the constructor
of an object that itself lives so (recursively). Then each object's fill runs once per object,
not once per step: SGLang's diffusion `CausalSelfAttentionKVCache._read_indices`, built per
request by `_allocate_causal_kv_cache`.

Not told so (the fill stays a sync for its callers): a class the tree never builds (a library
or a registry makes it: its lifetime is unknown), one that any per-step or ordinary function
builds (`KVCache(...)` inside `forward`), and one whose objects may come from `cls(...)` /
`type(self)(...)` in code of the class, a base or a subclass that is not named so. A
construction that stands in for a parameter the caller left out (`cache = plan_cache or
PlanCache()`) is no place the object is built when every caller passes that parameter
(`given`: callguards.guarded_lines decides it, as for `if plan_cache is None:`). The
construction sites are loops.py's (`makes`, with the function each is in): no pass of its own.
"""

from __future__ import annotations

from .loops import SELF_MADE

_CONSTRUCTORS = frozenset(("__init__", "__post_init__", "__new__"))


class BuiltOnce:
    """`why(cls)`: the reason `cls`'s objects live across steps, by where they are built; None
    when some place may build one every step, or none is known."""

    def __init__(self, program, results: dict, bases: dict, subclasses: dict, cold_name,
                 given: frozenset = frozenset()) -> None:
        self.program = program
        self.bases = bases
        self.subclasses = subclasses
        self.cold_name = cold_name
        self.sites: dict[str, set] = {}  # class -> {(maker class or None, function or None)}
        # constructions of a name the tree does not resolve (a class imported inside the function
        # that builds it): by the class's short name, so they count for any class so named
        self.unresolved: dict[str, set] = {}
        for result in results.values():
            for maker, made, function, fallback in getattr(result, "makes", ()) or ():
                if fallback is not None and (function, fallback) in given:
                    continue  # `cache = plan_cache or PlanCache()`, and every caller gives one
                if made.startswith(SELF_MADE + "?"):
                    name = made[len(SELF_MADE) + 1:].rsplit(".", 1)[-1]
                    self.unresolved.setdefault(name, set()).add((maker, function, False))
                    continue
                inner = maker if made.startswith(SELF_MADE) else program.chase(made, True)
                if inner is not None:
                    self.sites.setdefault(inner, set()).add((maker, function, made.startswith(SELF_MADE)))
                else:
                    self.unresolved.setdefault(made.rsplit(".", 1)[-1], set()).add((maker, function, False))
        self._why: dict[str, str | None] = {}

    def _family(self, cls: str) -> tuple[set, set]:
        """(the class and its in-tree subclasses: their objects run its methods; its in-tree
        bases: a `cls(...)` in their code may build it)."""
        below, stack = {cls}, [cls]
        while stack and len(below) < 256:
            for sub in self.subclasses.get(stack.pop(), ()):
                if sub not in below:
                    below.add(sub)
                    stack.append(sub)
        above, stack = set(), [cls]
        while stack and len(above) < 64:
            for base in self.bases.get(stack.pop()) or ():
                inner = self.program.chase(base, True) if base else None
                if inner and inner not in above and inner not in below:
                    above.add(inner)
                    stack.append(inner)
        return below, above

    def why(self, cls: str, serves, depth: int = 0) -> str | None:
        """`serves(cls)`: memo.py's test that a class serves steps (a module built at start-up)."""
        if self.cold_name is None:
            return None
        if cls in self._why:
            return self._why[cls]
        self._why[cls] = None  # a cycle of constructors proves nothing
        below, above = self._family(cls)
        sites = [site for member in below for site in self.sites.get(member, ())]
        sites += [site for member in below for site in self.unresolved.get(member.rsplit(".", 1)[-1], ())]
        sites += [site for member in above for site in self.sites.get(member, ()) if site[2]]
        if not sites:
            return None
        places = []
        for maker, function, _ in sites:
            if function is None:
                continue  # a module- or class-level statement: runs at import
            short = function.rsplit(".", 1)[-1]
            if short in _CONSTRUCTORS:
                # built with another object: lives as long as that one, if that one lives across steps
                if maker is None or depth >= 8:
                    return None
                owner = self.program.chase(maker, True) or maker
                if owner not in self.program.classes or (serves(owner) is None and self.why(owner, serves, depth + 1) is None):
                    return None
            elif not self.cold_name(short):
                return None
            places.append(short)
        found = "is built only in code that runs once" + (
            f" (`{'`, `'.join(sorted(set(places))[:3])}`)" if places else " (at import)")
        self._why[cls] = found
        return found
