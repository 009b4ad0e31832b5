"""Per-step roots by name that only start-up code calls.

A method named like per-step work (`build`: library_facts.toml `[roots] hot`) is a root by its
name. SGLang's hybrid KV pools are assembled by strategy objects whose `build` runs while the
radix cache is set up, once:

    class UnifiedRadixCache:
        def init_hicache(self, server_args, params):            # `init_*`: runs once
            attach_hybrid_pool_to_unified_cache(self, ...)

    def attach_hybrid_pool_to_unified_cache(cache, ...):
        result = strategy.build(cache=cache, ...)                 # its only call

    class _DeepSeekV4Strategy(StackStrategy):
        def build(self, *, cache, ...):
            ... host_swa_evict_fn=lambda n: cache.evict_host(n, ComponentType.SWA) ...

As a root, every call in its body counted as per-step work, and 33 SGLang findings in the
allocators' frees named it as their root, hiding the per-step path that does reach them (a PD
decode queue's `pop_transferred`). Such a method is no root when the program shows it runs at
start-up:

* every call of it (resolved, or on a receiver of unknown class that may hold its class) sits in
  code that runs once: a function named like start-up code (`skip-functions`: `__init__`,
  `init_*`, `load_*`, ...), or a module-level function whose every caller is such code (a few
  calls up, each caller resolved), or on a cold line; at least one call exists; and a read
  `fn = obj.build` (kept, maybe called every step) sits only on cold lines;
* no such use is inside a loop of a caller that is not itself named like start-up code (a
  driver's `while has_unfinished(): engine.step()` calls once per step);
* the method has no loop of its own. A root that owns the step loop runs once and serves every
  step (SGLang's `event_loop_*`, called once from the process entry): "called once" is not
  "runs once".

Conservative like request_roots.py: a use that nothing shows runs once (per-step code, a
per-request function, a method reached through a receiver, a closure) keeps the root. What the
method reaches is then walked like any code: from the per-step roots that call it, if any.
"""

from __future__ import annotations

from .callguards import binds
from .capture_roots import CALLED_BY_MODULE
from .fact_values import PROP

MAX_UP = 4  # how many callers up a module function's chain is followed to start-up code


def startup_only_roots(walk, cold_name) -> set[str]:
    """The root-named methods that the finished per-step `walk` (reachability.PerStep) shows
    only start-up code uses: see the module's doc. `cold_name`: config.cold_function."""
    if cold_name is None:
        return set()
    program = walk.program
    candidates = {q for q, (parent, _) in walk.reached.items()
                  if parent is None and walk.is_root(q) and q.rpartition(".")[0] in program.classes
                  and q.rpartition(".")[2] not in CALLED_BY_MODULE and not walk.steps.loops.get(q)}
    if not candidates:
        return set()
    names = {q.rpartition(".")[2] for q in candidates}
    callers: dict[str, list] = {}  # callee -> [(caller, line)] of the resolved calls
    by_name: dict[str, list] = {}  # name -> [(module, caller's class, call shape or PROP (a read), caller, line)]
    for caller, facts in program.functions.items():
        known = set()
        for call, target, _shift in walk.edges.get(caller, ()):
            known.add((call.line, call.name))
            callers.setdefault(target, []).append((caller, call.line))
        path = program.path_of[caller]
        owner = caller.rpartition(".")[0]
        owner = owner if owner in program.classes else None
        module = walk.module_of.get(path)
        for call in facts.get("calls", ()):
            if call.name in names and call.target[0] == PROP and (call.line, call.name) not in known:
                # `fn = obj.build`, kept and called later (maybe every step): runs once only if
                # the read never runs
                by_name.setdefault(call.name, []).append((module, owner, PROP, caller, call.line))
        for line, name, _op, shape in walk.dispatch.get(caller, ()):
            if name in names and (line, name) not in known:
                by_name.setdefault(name, []).append((module, owner, shape, caller, line))
    startup = _StartUp(walk, callers, cold_name)
    found = set()
    for qualname in candidates:
        cls, _, short = qualname.rpartition(".")
        facts = program.functions[qualname]
        uses = list(callers.get(qualname, ()))
        reads = []
        for module, owner, shape, caller, line in by_name.get(short, ()):
            if not walk.imports.knows(module, cls, owner):
                continue
            if shape is PROP:
                reads.append((caller, line))
            elif binds(facts, shape):
                uses.append((caller, line))
        if uses and all(startup.use(caller, line) for caller, line in uses) \
                and all(walk.line_cold(program.path_of[caller], line) is not None for caller, line in reads):
            found.add(qualname)
    return found


class _StartUp:
    """Whether a call runs only while the program starts."""

    def __init__(self, walk, callers: dict, cold_name) -> None:
        self.walk = walk
        self.callers = callers
        self.cold_name = cold_name

    def use(self, caller: str, line: int, depth: int = 0) -> bool:
        """The call on `line` of `caller` runs only at start-up (or never)."""
        walk = self.walk
        path = walk.program.path_of[caller]
        if walk.line_cold(path, line) is not None:
            return True
        if self.cold_name(caller.rpartition(".")[2]):
            return True  # a loop in `__init__` runs at start-up all the same
        if caller in walk.reached or caller in walk.request or depth >= MAX_UP:
            return False
        owner = caller.rpartition(".")[0]
        if owner in walk.program.classes or owner in walk.program.functions:
            return False  # a method (maybe called through a receiver) or a closure: unknown callers
        if any(start <= line <= end for start, end, *_ in walk.steps.loops.get(caller, ())):
            return False
        up = self.callers.get(caller, ())
        return bool(up) and all(self.use(above, at, depth + 1) for above, at in up)
