"""What a wrapper's `**kwargs`, handed on whole, can carry into the functions it calls.

    def fmha(q, k, v, plan, out=None, **kwargs):
        return _fmha(q, k, v, plan, out=out, **kwargs)    # k_scale, q_scale, ... pass through

The wrapper names none of `_fmha`'s keyword parameters, yet each may arrive in `kwargs`: what
`_fmha` gets for `k_scale` is what a call into the wrapper passes by that name, or the default
when it passes none. The whole-program pass (wholeprogram.py `argument`) reads such a value as
following the wrapper's keyword `k_scale`, like one of its own parameters: a sync on it is the
callers' to tell, and host data when every caller passes host data or nothing. A wrapper that
puts something into its `kwargs` first (`kwargs["k_scale"] = ...`) does not only hand on what it
was given: its call counts as a `**mapping` (flagguards.py `_stores_into`).
"""

from __future__ import annotations


def forwarded_names(program, edges: dict, forwards: frozenset, names) -> dict[str, tuple[str, ...]]:
    """wrapper -> the keyword names its `**kwargs` hands on (the parameters of the functions it
    hands them to that it has none of itself, also those they hand on further), for the
    wrappers with such a call (`forwards`: (wrapper, line, column); `names(call, target, shift,
    parameter)`: whether the call passes that parameter by name or position, `Solver._names`)."""
    handed: dict[str, list[tuple]] = {}  # wrapper -> [(callee, shift, the callee's parameters it names)]
    for caller, out in edges.items():
        for call, target, shift in out:
            if (caller, call.line, call.column) in forwards:
                named = frozenset(p for p in program.all_params(target) if names(call, target, shift, p))
                handed.setdefault(caller, []).append((target, shift, named))
    carried: dict[str, set[str]] = {}
    changed = True
    while changed:  # a wrapper of a wrapper hands on what the inner one does
        changed = False
        for wrapper, calls in handed.items():
            own = set(program.all_params(wrapper))
            found = carried.setdefault(wrapper, set())
            for target, shift, named in calls:
                more = (set(program.all_params(target)[shift:]) | carried.get(target, set())) - named - own - found
                if more:
                    found |= more
                    changed = True
    return {wrapper: tuple(sorted(found)) for wrapper, found in carried.items() if found}
