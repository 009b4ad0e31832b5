"""Calls by name that may land in given methods: shared by the guards that count a method's callers
(callguards.py, flagguards.py)."""

from __future__ import annotations


def dispatched_calls(program, edges: dict, results: dict, methods, binds):
    """(caller, line, shape, target) for each call by name (a method called on a receiver of
    unknown class, which the per-step walk follows to every method of that name it can bind to)
    that may land in one of `methods` (qualnames), and whose shape binds to it (`binds`:
    callguards.binds); calls whose receiver's class is known are left out (they are among
    the edges)."""
    by_name: dict[str, list] = {}
    for target in methods:
        owner, _, short = target.rpartition(".")
        if owner in program.classes and target in program.functions:
            by_name.setdefault(short, []).append(target)
    if not by_name:
        return
    for result in results.values():
        for caller, calls in (getattr(result, "dispatch", None) or {}).items():
            resolved = None
            for line, name, op, shape in calls:
                targets = by_name.get(name)
                if not targets or op:
                    continue
                if resolved is None:
                    resolved = {(call.line, call.name) for call, _, _ in edges.get(caller, ())}
                if (line, name) in resolved:  # the receiver's class is known: counted with the edges
                    continue
                for target in targets:
                    if binds(program.functions[target], shape):
                        yield caller, line, shape, target
