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

Conservative: every call or attribute read of the name anywhere in the program (on any receiver,
in any class) must sit on such a line, and there must be one; `forward` itself, which
`nn.Module.__call__` runs, always stays a root.
"""

from __future__ import annotations

# what a cold line's reason says when the test it sits under is a CUDA-graph capture test
# (branches.py Conditions._by_name)
CAPTURE_REASONS = ("CUDA-graph capture", "capturing`")
CALLED_BY_MODULE = ("forward",)  # nn.Module.__call__ runs these by name


def capture_reason(why: str | None) -> bool:
    return bool(why) and any(reason in why for reason in CAPTURE_REASONS)


def capture_only_roots(program, dispatch: dict, line_cold, is_root) -> set[str]:
    """The root-named methods whose name the program uses only on capture-only lines."""
    sites: dict[str, list] = {}
    for caller, facts in program.functions.items():
        path = program.path_of[caller]
        for call in facts.get("calls", ()):
            if call.name:
                sites.setdefault(call.name, []).append((path, call.line))
        for line, name, _op, _shape in dispatch.get(caller, ()):
            sites.setdefault(name, []).append((path, line))
    found = set()
    for qualname in program.functions:
        short = qualname.rpartition(".")[2]
        if short in CALLED_BY_MODULE or not is_root(qualname):
            continue
        used = sites.get(short)
        if used and all(capture_reason(line_cold(path, line)) for path, line in used):
            found.add(qualname)
    return found
