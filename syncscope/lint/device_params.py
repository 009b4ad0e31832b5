"""Copies whose target device is a parameter (issue 24, "host data taken for device data").

vLLM's `make_tensor_with_pad(x, pad, dtype, *, device=None, pin_memory=False)` ends in
`tensor = torch.from_numpy(padded_x).to(device)`. Read alone, that is a blocking host->device
copy (SYN403). But where the copy goes is its caller's to say, and the only caller
(`penalties._convert_to_tensors`) passes `device="cpu"`: a host-to-host no-op, followed by its
own pinned, non_blocking copy to the GPU. So the line is a copy to the GPU only under a test on
the parameter: `device is not None and device != "cpu"` (`.to(None)` moves nothing either).

This module turns such a statement into one more guarded block of its function, in the compiled
form of constargs.py, so the machinery for parameter tests decides it: a call passing `"cpu"`
(or leaving the `None` default) is ruled out (constargs `ruled_out`), a line no per-step call
may take is cold (stepargs.py), and a call passing any other value, or one not known, keeps the
finding.

Only a statement whose one move is that `.to(param)` of data built on the host right there
(`torch.from_numpy(a).to(p)`, `np.asarray(a)` ...) counts: the guard covers whole lines, so a
line that could also sync otherwise (`x.sum().item()` beside the copy) is left alone, and
`x.to(p)` of a tensor of unknown place may be a copy back to the host when `p` is `"cpu"`.
"""

from __future__ import annotations

import ast

from .nodewalk import nodes_breadth_first

_CALL = frozenset({ast.Call})

# module-level constructors that make a host tensor or array from host data: no sync of their own
# (not `torch.tensor` / `torch.as_tensor`: given a CUDA tensor they keep it there)
_HOST_BUILDERS = frozenset({"from_numpy", "asarray", "array", "frombuffer"})
_BUILDER_MODULES = frozenset({"torch", "np", "numpy"})
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.Return, ast.Expr)
HOST_DEVICES = ("cpu",)  # literal devices a copy to which stays on the host


def device_param_guards(function, params: frozenset[str]) -> list[tuple]:
    """[(start, end, test)] for each simple statement of `function` (not of functions nested
    in it) whose one device move is `<host-built value>.to(p)` / `.to(device=p)` with `p` one of
    `params` (parameters never rebound): the test under which the copy reaches a GPU."""
    found = []
    for stmt in _statements(function.body):
        value = getattr(stmt, "value", None)
        if value is None:
            continue
        param = _moved_to_param(value, params)
        if param is None:
            continue
        end = getattr(stmt, "end_lineno", None) or stmt.lineno
        test = ("and", (("none", param, False),
                        *(("cmp", param, "ne", device) for device in HOST_DEVICES)))
        found.append((stmt.lineno, end, test))
    return found


def _statements(body):
    """The function's own statements, into `if`/`for`/`while`/`with`/`try` blocks, not into
    nested definitions (their parameters are their own)."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, _SIMPLE):
            yield stmt
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _statements(getattr(stmt, field, None) or [])
        for handler in getattr(stmt, "handlers", None) or []:
            yield from _statements(handler.body)


def _moved_to_param(value, params: frozenset[str]) -> str | None:
    """The parameter `value` (an expression) is copied to by its only call that is no host
    builder: `torch.from_numpy(a).to(device)`. None otherwise."""
    calls = nodes_breadth_first(value, _CALL)
    moves = [call for call in calls if not _host_builder(call)]
    if len(moves) != 1:
        return None
    call = moves[0]
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "to"):
        return None
    # the data must be built on the host right there: `gpu_tensor.to("cpu")` would be a copy
    # back to the host, a sync of its own, which the `"cpu"` a caller passes must not hide
    if not (isinstance(call.func.value, ast.Call) and _host_builder(call.func.value)):
        return None
    target = None
    if call.args and not isinstance(call.args[0], ast.Starred):
        target = call.args[0]
    for keyword in call.keywords:
        if keyword.arg == "device":
            target = keyword.value
        elif keyword.arg is None:
            return None  # `**kwargs` may carry a device of its own
    if isinstance(target, ast.Name) and target.id in params:
        return target.id
    return None


def _host_builder(call) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in _HOST_BUILDERS and \
        isinstance(func.value, ast.Name) and func.value.id in _BUILDER_MODULES
