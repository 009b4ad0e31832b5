"""Per-step roots by name that the program calls only once per request.

A method named like per-step work (metadata builders' `build`: library_facts.toml `[roots]
hot`) is a root by its name. When every use the program makes of it sits on a line that runs
once per request (outside the loops of a per-request function, reachability.py: a diffusion
stage's `forward` and what it calls there), or in code that no root reaches at all, and at least
one sits on such a once-per-request line, the method runs once per request too:

    def _build_cube_attn_metadata(server_args, *, packed, num_steps, device):   # stage set-up
        return CubeSparseAttentionMetadataBuilder().build(packed=packed, ...)    # its only call

    metadata = _build_cube_attn_metadata(server_args, packed=packed, ...)       # before the loop
    for step_index in range(num_steps):                                          # reused each step
        ...

It is then walked as per-request code (its loops over data run once per call too), not as a
root. Conservative, like capture_roots.py: every call the whole-program pass resolved to the
method, and every call of its name on a receiver of unknown class that the per-step walk would
follow into it (the receiver may hold the method's class, importclosure.py, and the arguments
bind to its parameters, callguards.binds), counts; an attribute read of its name that is no call
(`fn = builder.build`, called later, maybe in a loop) keeps it a root unless its line is cold,
and so does a call in a nested function that nothing reaches (a closure handed to a loop). A
vLLM metadata builder's `build`, called by the model runner every step through a receiver of
unknown class, stays a root. `forward`, which `nn.Module.__call__` runs, always stays one.
"""

from __future__ import annotations

from .callguards import binds
from .capture_roots import CALLED_BY_MODULE
from .fact_values import PROP

_KEEP, _ONCE, _COLD, _UNREACHED = 0, 1, 2, 3  # what one use says


def request_only_roots(walk) -> set[str]:
    """The root-named methods that the finished per-step `walk` (reachability.PerStep, run with
    them as roots) shows the program uses only once per request: see the module's doc."""
    program = walk.program
    names = {q.rpartition(".")[2] for q in walk.reached if walk.reached[q][0] is None and walk.is_root(q)}
    names -= set(CALLED_BY_MODULE)
    if not names:
        return set()
    resolved: dict[str, list] = {}  # method -> [what each use says]
    unresolved: dict[str, list] = {}  # name -> [(module, caller's class, call shape, what the use says)]
    for caller, facts in program.functions.items():
        path = program.path_of[caller]
        known = set()
        for call, target, _shift in walk.edges.get(caller, ()):
            known.add((call.line, call.name))
            if target.rpartition(".")[2] in names:
                resolved.setdefault(target, []).append(_use(walk, caller, path, call.line))
        owner = caller.rpartition(".")[0]
        owner = owner if owner in program.classes else None
        module = walk.module_of.get(path)
        for call in facts.get("calls", ()):
            if call.name in names and call.target[0] == PROP and (call.line, call.name) not in known:
                # `fn = obj.build`: where it is called cannot be told, unless the read never runs
                said = _COLD if walk.line_cold(path, call.line) is not None else _KEEP
                unresolved.setdefault(call.name, []).append((module, owner, None, said))
        for line, name, _op, shape in walk.dispatch.get(caller, ()):
            if name in names and (line, name) not in known:
                unresolved.setdefault(name, []).append((module, owner, shape, _use(walk, caller, path, line)))
    found = set()
    for qualname, (parent, _line) in walk.reached.items():
        cls, _, short = qualname.rpartition(".")
        if parent is not None or short not in names or cls not in program.classes:
            continue
        said = list(resolved.get(qualname, ()))
        if _ONCE not in said and not any(use[3] == _ONCE for use in unresolved.get(short, ())):
            continue  # no use on a once-per-request line: stays a root (the common case)
        facts = program.functions[qualname]
        said += [use for module, owner, shape, use in unresolved.get(short, ())
                 if walk.imports.knows(module, cls, owner) and (shape is None or binds(facts, shape))]
        if _KEEP not in said and _ONCE in said:
            found.add(qualname)
    return found


def _use(walk, caller: str, path: str, line: int) -> int:
    """What a call on `line` of `caller` says of the callee: _COLD when the line never runs
    while serving, _ONCE when it runs once per request (a per-request function's line outside
    its step loops), _UNREACHED when nothing per-step or per-request reaches the caller (a test, a
    loader) and it is no nested function, _KEEP otherwise (per-step code)."""
    if walk.line_cold(path, line) is not None:
        return _COLD
    if caller in walk.reached:
        return _KEEP
    if caller in walk.request:
        if caller in walk.whole:
            return _ONCE
        once = walk.steps.once(caller, caller in walk.plain)
        return _ONCE if once is None or any(start <= line <= end for start, end in once) else _KEEP
    if caller.rpartition(".")[0] in walk.program.functions:
        return _KEEP  # a closure nothing reaches by name: who calls it, and how often, is unknown
    return _UNREACHED
