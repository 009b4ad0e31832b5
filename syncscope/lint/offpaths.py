"""Functions that run only from lines that never run by default, and where a parameter's data
comes from when only the default path counts (`host_fed_by_default`).

    class VisionModel(nn.Module):
        def _process_image_input(self, image_input):
            grid_thw = image_input["image_grid_thw"]        # a `keep_on_cpu` field: host memory
            return self.visual(pixel_values, grid_thw)      # the tower's `forward(x, grid_thw)`

        def encoder_eager_forward(self, mm_kwargs):         # called only by a class built behind
            grid_thw = async_tensor_h2d(mm_kwargs["image_grid_thw"], self.device)  # an opt-in switch
            return self.visual(pixel_values, grid_thw)      # device data, on the opt-in path only

The tower's `grid_thw.tolist()` reads host memory wherever the default configuration runs it: the
second call is in a method nothing calls outside lines that never run by default (the opt-in
manager's methods, optin.py). The facts, about code:
* A line never runs by default when it is cold (the file's own cold lines and those the rest of
  the program decides, callguards.decided_lines) for a reason that holds in every step of the
  default configuration on CUDA: another platform, a switch that is off, a None-guard every
  caller rules out, an error path. Not a line that only runs now and then (an event, start-up, a
  cache fill, a graph capture: `RUNS_SOMETIMES`): it still runs while serving.
* A method is off by default when the tree calls it at least once (resolved; through the method
  it overrides, on a receiver of the base class; as a submodule's `forward`; by name on a receiver
  of unknown class; or reads it without a call, `fn = self.helper`, a possible property), and each
  of those calls is on a line that never runs by default or in a method off by default (the
  least such set). A dunder or a per-step root's own name (`forward`) may run without a call in
  the tree: never off; a name only a wildcard root matches (`forward_*`) is off like any method
  when the tree calls it and every call is off, and then no per-step root either, unless it
  overrides or is overridden (a framework may pick it by a computed name). Nor a module-level
  function (a name passed as a value is no recorded call).
* What an off method passes, and a submodule call on a line that never runs, does not count for
  where a parameter's data comes from: a parameter every other call passes host data for is
  host-fed by default. Its findings are kept, cold, saying so (they sync only on the off path);
  the calls that pass it on are not flagged.
"""

from __future__ import annotations

import re

from .callguards import binds
from .default_summaries import resummarize
from .fact_values import METHOD, SUPER
from .param_items import with_items
from .reachability import ColdLines
from .refill_variant import refills_off, swapped
from .subclass_towers import add_subclass_towers
from .uncalled import uncalled_methods
from .registry_fields import add_picked_forwards


def off_by_default(solver, results: dict, guarded: dict, library) -> tuple[dict, frozenset, frozenset]:
    """({path: ColdLines} of the lines that never run by default, the methods off by default, and
    those of them that are no root whatever their name), once the solver's module calls are
    complete: `host_fed_by_default` counts no call an off method makes, and the per-step walk
    takes none of the last for a root (a `forward_*` helper called only under a switch that is
    off). A method that overrides or is overridden stays a root: a framework may pick it by a
    computed name (`getattr(self, f"forward_{platform}")` runs `forward_cuda`, whose only calls
    the tree shows are ROCm's `forward_hip` falling back to it)."""
    add_subclass_towers(solver)  # an inherited method's `self.visual(...)`: the subclass's tower too
    add_picked_forwards(solver)  # `self.adapter(...)` of a class a dict of classes gave
    cold = never_run(results, guarded)
    off = off_functions(solver, results, cold, library)
    overrides = solver._overrides()
    overriding = {method for below in overrides.values() for method in below}
    return cold, off, frozenset(m for m in off if m not in overrides and m not in overriding)


def host_fed_by_default(solver, starred, results: dict, cold: dict, off: frozenset, library,
                        per_step=None) -> tuple:
    """(fed, host, host by default, {(function, parameter): why}): `solver.host_fed(starred)` over
    every call (the items of host parameters added, param_items.py), its host part again over the
    calls that may run by default (without the out-calls of the methods `off` by default, nor the
    submodule calls on `cold` lines: `off_by_default`), and why each parameter host-fed only by
    default is: its own findings stay, cold, where they were dropped before; the calls passing it
    on are not flagged (the findings' `fed`). The methods nothing in the tree calls count as off
    too (uncalled.py; `per_step`: the per-step table, whose functions are not such)."""
    fed, host = solver.host_fed(starred)
    host = with_items(host)
    if uncalled := uncalled_methods(solver, results, library, per_step):
        off = off_functions(solver, results, cold, library, uncalled)
    path_of = solver.program.path_of
    edges, modules = solver.edges, solver.module_edges
    kept = {caller: [e for e in out if not _cold_line(cold, path_of.get(caller), e[0].line)]
            for caller, out in modules.items() if caller not in off}
    if not off and all(len(kept.get(caller, ())) == len(out) for caller, out in modules.items()):
        return fed, host, host, {}
    refilled = refills_off(results, off)  # a keep_on_cpu field refilled only off: host by default
    args = {key: value for _, _, given in refilled.values() for key, value in given.items()}
    solver.edges = {caller: swapped(out, caller, args) if args else out
                    for caller, out in edges.items() if caller not in off}
    solver.module_edges = {caller: swapped(out, caller, args) for caller, out in kept.items()} if args else kept
    try:
        fed_default, host_default = solver.host_fed(starred)
    finally:
        solver.edges, solver.module_edges = edges, modules
    host_default = with_items(host_default)
    gained = (fed_default | host_default) - (fed | host)
    resummarize(solver, refilled, gained)  # a sync the default path never makes: none for its callers
    why = {key: _why(key, solver, off, uncalled) for key in gained}
    why.update((("refill", path, code, line), reason) for path, (reason, dropped, _) in refilled.items()
               for code, line, _ in dropped)
    return fed, host, host | host_default, why


def _why(key: tuple, solver, off: frozenset, uncalled: frozenset) -> str:
    target, param = key
    callers = {caller for caller in off for table in (solver.all_edges, solver.module_edges)
               for _, callee, _ in table.get(caller, ()) if callee == target}
    givers = sorted({".".join(caller.rsplit(".", 2)[-2:]) for caller in callers})
    via = f" (`{'`, `'.join(givers[:3])}`)" if givers else ""
    source = "functions nothing in the tree calls" if callers and callers <= uncalled else \
        "calls that never run by default or functions nothing in the tree calls" if callers & uncalled else \
        "calls that never run by default"
    return f"every call that runs by default passes host data for `{param}`; other data comes only " \
           f"from {source}{via}"


# why a line is cold when it does run while serving, only not in every step (an event, start-up,
# a cache fill, a graph capture, a host-only function): its calls still pass what they pass
RUNS_SOMETIMES = re.compile(r"event|once|capture|fills|grows|per key|counter|host data")


def never_run(results: dict, guarded: dict) -> dict:
    """{path: ColdLines} of the lines that never run in the default configuration on CUDA:
    another platform's, a switch's that is off, a None-guard's that every caller rules out, an
    error path's."""
    found = {}
    for path, result in results.items():
        ranges = tuple(getattr(result, "branch_cold", ()) or ()) + tuple(guarded.get(path, ()))
        kept = [(start, end, why) for start, end, why in ranges if not RUNS_SOMETIMES.search(why)]
        if kept:
            found[path] = ColdLines(kept)
    return found


def _cold_line(cold: dict, path: str, line: int) -> bool:
    lines = cold.get(path)
    return lines is not None and lines.why(line) is not None


def _virtual(ref: tuple) -> bool:
    """A method call an override may answer (wholeprogram._virtual)."""
    if ref[0] != METHOD:
        return False
    _, hops, via_class = ref[1]
    return not via_class and SUPER not in hops


def off_functions(solver, results: dict, cold: dict, library, uncalled: frozenset = frozenset()) -> frozenset:
    """The methods every call of which in the tree is on a line that never runs by default or in
    such a method (the least set: a cycle of calls proves nothing), with the methods nothing in
    the tree calls (`uncalled`, uncalled.py) and what only they call."""
    program, edges, modules = solver.program, solver.all_edges, solver.module_edges
    path_of = program.path_of
    overrides = solver._overrides()
    roots = getattr(library, "hot_roots", ()) if library is not None else ()
    # a root's exact name may run with no call in the tree (the framework calls `forward`); a name
    # a wildcard makes a root (`forward_*`) is a helper's name too: off when every call of it is
    named_roots = frozenset(p for p in roots if not any(c in p for c in "*?["))
    by_name: dict[str, list] = {}  # a name called by name on a cold line -> methods of that name
    dispatch: dict[str, list] = {}  # caller -> its calls by name
    named: dict[str, dict] = {}  # a name -> the callers that call it by name
    for result in results.values():
        for caller, calls in (getattr(result, "dispatch", None) or {}).items():
            dispatch.setdefault(caller, []).extend(calls)
            for _, name, _, _ in calls:
                named.setdefault(name, {})[caller] = None
    # seeds: what a call on a cold line may land in
    seeds: set[str] = set()
    for table in (edges, modules):
        for caller, out in table.items():
            lines = cold.get(path_of.get(caller))
            if lines is None:
                continue
            for call, target, _ in out:
                if lines.why(call.line) is not None:
                    seeds.add(target)
                    if table is edges and _virtual(call.target):
                        seeds.update(overrides.get(target, ()))
    seeds.update(callee for caller in uncalled for table in (edges, modules) for _, callee, _ in table.get(caller, ()))
    for caller, calls in dispatch.items():
        lines = cold.get(path_of.get(caller))
        if lines is not None:
            by_name.update((name, []) for line, name, op, _ in calls if not op and lines.why(line) is not None)
    if not seeds and not by_name:
        return uncalled
    for qualname in program.functions:
        owner, _, short = qualname.rpartition(".")
        if short in by_name and owner in program.classes:
            by_name[short].append(qualname)
            seeds.add(qualname)
    bases: dict[str, list] = {}
    for base, below in overrides.items():
        for method in below:
            bases.setdefault(method, []).append(base)
    into_modules: dict[str, list] = {}
    for caller, out in modules.items():
        for call, target, _ in out:
            into_modules.setdefault(target, []).append((caller, call.line))
    off: set[str] = set(uncalled)

    def calls_into(target: str):
        """(caller, line) of every call the tree makes that may land in `target`."""
        for caller in solver.callers.get(target, ()):
            yield from ((caller, call.line) for call, t, _ in edges.get(caller, ()) if t == target)
        for base in bases.get(target, ()):
            for caller in solver.callers.get(base, ()):
                yield from ((caller, call.line) for call, t, _ in edges.get(caller, ())
                            if t == base and _virtual(call.target))
        yield from into_modules.get(target, ())
        short = target.rpartition(".")[2]
        facts = program.functions[target]
        for caller in named.get(short, ()):
            resolved = {(call.line, call.name) for call, _, _ in edges.get(caller, ())}
            yield from ((caller, line) for line, name, op, shape in dispatch[caller]
                        if name == short and not op and (line, name) not in resolved and binds(facts, shape))

    def is_off(target: str) -> bool:
        owner, _, short = target.rpartition(".")
        if owner not in program.classes or short.startswith("__") or short in named_roots:
            return False
        found = False
        for caller, line in calls_into(target):
            if caller not in off and not _cold_line(cold, path_of.get(caller), line):
                return False
            found = True
        return found

    pending = sorted(seeds)
    while pending:
        target = pending.pop()
        if target in off or target not in program.functions or not is_off(target):
            continue
        off.add(target)
        # what it calls may now be called only from off code
        for table in (edges, modules):
            for call, callee, _ in table.get(target, ()):
                pending.append(callee)
                if table is edges and _virtual(call.target):
                    pending.extend(overrides.get(callee, ()))
    return frozenset(off)

