"""Methods nothing in the tree calls, for where a parameter's data comes from by default
(offpaths.host_fed_by_default; issue 24, "host data taken for device data").

    class MiniCPMV(nn.Module):
        def get_vision_embedding(self, pixel_values, tgt_sizes=None):   # no call, no reference
            return self.vpm(pixel_values, tgt_sizes=tgt_sizes)
        def get_image_feature(self, items):                             # the model's image path
            tgt_sizes = torch.stack([item.tgt_size for item in items])  # processor-built: host
            return self.vpm(pixel_values, tgt_sizes=tgt_sizes)

The tower's `forward(pixel_values, tgt_sizes)` gets host sizes from the one path the program
runs; the other call passes on a parameter of a method that no code of the tree calls, so what it
passes is unknown, and an unknown argument kept every finding on `tgt_sizes` in the tower. The
fact, about code: a method of a class that the tree never names (no call or read of an
attribute of that name on any receiver, resolved or not, no call of that name on an object of
unknown class), that is not a dunder, not a per-step root by its name (`forward`, or a name a
wildcard root matches) and not reached from a per-step root, runs only if code outside the tree
calls it, and what it passes on from its own parameters is data the tree knows nothing of. When
each of its calls passes only that (or host data), its calls count like those of a method off
by default (offpaths.py): a parameter that every other call passes host data for is host-fed by
default, and its findings are kept, cold, saying where the other data comes from. A method that
passes data it makes itself on the device (`grid_thw.cuda()`) shows that data reaching the
callee: it does not count (vLLM's `encoder_eager_forward`, which another class calls by name).

A function the tree hands to another runtime (foreign_exports.py: `tvm_ffi.register_global_func`)
and that nothing in the tree calls is such code too, whatever it passes: its data comes from the
runtime that calls it, and what it makes of that is not what a serving step passes.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from . import provenance as P


def uncalled_methods(solver, results: dict, library, per_step) -> frozenset:
    """The methods of the module docstring that make a call into the tree (only those can feed
    a parameter); empty without a per-step table (nothing is a root then)."""
    if not per_step or library is None:
        return frozenset()
    return _uncalled_methods(solver, results, library, per_step) | _foreign_only(solver, results, per_step)


def _foreign_only(solver, results: dict, per_step) -> frozenset:
    """The functions handed to another runtime (foreign_exports.py) that make a call into the
    tree, that nothing in the tree calls and that no per-step root reaches."""
    exported = {name for result in results.values() for name in getattr(result, "foreign_exports", None) or ()}
    return frozenset(name for name in exported if name in solver.program.functions and name not in solver.callers
                     and name not in per_step and (solver.all_edges.get(name) or solver.module_edges.get(name)))


def _uncalled_methods(solver, results: dict, library, per_step) -> frozenset:
    program = solver.program
    roots = tuple(getattr(library, "hot_roots", ()) or ())
    targets = {target for out in solver.module_edges.values() for _, target, _ in out}
    candidates: dict[str, list[str]] = {}  # short name -> the methods of that name
    for table in (solver.all_edges, solver.module_edges):
        for caller, out in table.items():
            if not out or caller in solver.callers or caller in targets or caller in per_step:
                continue
            owner, _, short = caller.rpartition(".")
            if owner not in program.classes or short.startswith("__") or any(fnmatchcase(short, p) for p in roots):
                continue
            candidates.setdefault(short, []).append(caller)
    if not candidates:
        return frozenset()
    named: set[str] = set()  # the candidates' names some code of the tree calls or reads
    for facts in program.functions.values():
        named.update(call.name for call in facts["calls"] if call.name in candidates)
    for result in results.values():
        for calls in (getattr(result, "dispatch", None) or {}).values():
            named.update(name for _, name, _, _ in calls if name in candidates)
    return frozenset(q for short, methods in candidates.items() if short not in named for q in methods
                     if _passes_on_only(solver, q))


def _passes_on_only(solver, caller: str) -> bool:
    """Each call of `caller` passes, for each parameter past the implicit ones, the caller's own
    parameter's data, host data or nothing."""
    for table in (solver.all_edges, solver.module_edges):
        for call, target, shift in table.get(caller, ()):
            for param in solver.program.all_params(target)[shift:]:
                where, follows = solver.argument(caller, call, target, shift, param)
                if follows is None and not P.known_host(where):
                    return False
    return True
