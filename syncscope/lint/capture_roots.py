"""Per-step roots that run only while CUDA graphs are captured.

A method named like per-step work (`forward_*`, `_forward_*`: library_facts.toml `[roots] hot`)
is a root by its name. When the program calls that name only on lines that run only while a CUDA
graph is captured (branches.py: `if get_is_capture_mode():`, `if
torch.cuda.is_current_stream_capturing():`; once per batch size at start-up, a replay runs the
graph), the method runs only then too:

    if self.alt_stream is not None and get_is_capture_mode():
        out = self.forward_normal_dual_stream(x)  # the only call of that name in the program
    else:
        out = self._forward_router_experts(x)     # what a step runs

Conservative: every call the whole-program pass resolved to the method, every call of its name
on a receiver of unknown class that the per-step walk would follow into it, and every
attribute read of its name that is no call, must sit on such a line (the per-step walk follows no call on one), and one such line must
call the name; `forward` itself, which `nn.Module.__call__`
runs, always stays a root.
"""

from __future__ import annotations

from .callguards import binds
from .fact_values import PROP

# what a cold line's reason says when the test it sits under is a CUDA-graph capture test
# (branches.py Conditions._by_name)
CAPTURE_REASONS = ("CUDA-graph capture", "capturing`")
CALLED_BY_MODULE = ("forward",)  # nn.Module.__call__ runs these by name


def capture_reason(why: str | None) -> bool:
    return bool(why) and any(reason in why for reason in CAPTURE_REASONS)


def capture_only_roots(walk) -> set[str]:
    """The root-named methods (reachability.PerStep `walk`) that run only where the program uses
    them on capture-only lines: every call the whole-program pass resolved to the method, every
    call of its name on a receiver of unknown class that the walk would follow into it (the
    receiver may hold the method's class, importclosure.py, and the call's arguments bind to its
    parameters, callguards.binds), and every attribute read of its name that is no call."""
    program = walk.program
    resolved: dict[str, list] = {}  # method -> [(path, line)] of the calls resolved to it
    unresolved: dict[str, list] = {}  # name -> [(path, line, module, caller's class, call shape)]
    captured: dict[str, list] = {}  # name -> [(module, caller's class)] of its calls under a capture test
    names = {q.rpartition(".")[2] for q in program.functions if walk.is_root(q)} - set(CALLED_BY_MODULE)
    for caller, facts in program.functions.items():
        path = program.path_of[caller]
        known = set()
        for call, target, _shift in walk.edges.get(caller, ()):
            if call.name in names:  # only the calls of those names are looked up below
                known.add((call.line, call.name))
            if target.rpartition(".")[2] in names:
                resolved.setdefault(target, []).append((path, call.line))
        owner = caller.rpartition(".")[0]
        owner = owner if owner in program.classes else None
        module = walk.module_of.get(path)
        for call in facts.get("calls", ()):
            if call.name not in names:
                continue
            if call.target[0] == PROP and (call.line, call.name) not in known:  # `fn = obj.forward_x`
                unresolved.setdefault(call.name, []).append((path, call.line, module, owner, None))
            elif capture_reason(walk.line_cold(path, call.line)):
                captured.setdefault(call.name, []).append((module, owner))
        for line, name, _op, shape in walk.dispatch.get(caller, ()):
            if name in names and (line, name) not in known:
                unresolved.setdefault(name, []).append((path, line, module, owner, shape))
    found = set()
    for qualname in program.functions:
        cls, _, short = qualname.rpartition(".")
        if short in CALLED_BY_MODULE or cls not in program.classes or not walk.is_root(qualname):
            continue
        if not any(walk.imports.knows(module, cls, owner) for module, owner in captured.get(short, ())):
            continue  # first: few names have a call under a capture test
        used = list(resolved.get(qualname, ()))
        facts = program.functions[qualname]
        used += [(path, line) for path, line, module, owner, shape in unresolved.get(short, ())
                 if walk.imports.knows(module, cls, owner) and (shape is None or binds(facts, shape))]
        if all(capture_reason(walk.line_cold(path, line)) for path, line in used):
            found.add(qualname)
    return found
