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

Also (session 11): `torch.tensor([self.num_tokens, int(self.flag)], device=device)` of a list
written out there, of Python numbers, names and fields only (SGLang's
`MLPSyncBatchInfo._get_local_tensor(device)`, called with `device="cpu"` by `finalize_local`):
host data built on `device`, a copy to the GPU under the same test.
"""

from __future__ import annotations

import ast

from .nodewalk import nodes_breadth_first

_CALL = frozenset({ast.Call})

# module-level constructors that make a host tensor or array from host data: no sync of their own
# (not `torch.tensor` / `torch.as_tensor`: given a CUDA tensor they keep it there)
_HOST_BUILDERS = frozenset({"from_numpy", "asarray", "array", "frombuffer"})
_BUILDER_MODULES = frozenset({"torch", "np", "numpy"})
_FROM_DATA = frozenset({"tensor", "as_tensor"})  # torch functions that copy the data they are given
_NUMBERS = frozenset({"int", "float", "bool", "len"})
_SIMPLE = (ast.Assign, ast.AnnAssign, ast.Return, ast.Expr)
HOST_DEVICES = ("cpu",)  # literal devices a copy to which stays on the host


def device_param_guards(function, params: frozenset[str]) -> list[tuple]:
    """[(start, end, test)] for each simple statement of `function` (not of functions nested
    in it) whose one device move is `<host-built value>.to(p)` / `.to(device=p)` with `p` one of
    `params` (parameters never rebound): the test under which the copy reaches a GPU."""
    found = []
    for stmt in own_statements(function.body):
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


def own_statements(body):
    """The function's own statements, into `if`/`for`/`while`/`with`/`try` blocks, not into
    nested definitions (their parameters are their own)."""
    for stmt in body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, _SIMPLE):
            yield stmt
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from own_statements(getattr(stmt, field, None) or [])
        for handler in getattr(stmt, "handlers", None) or []:
            yield from own_statements(handler.body)


def copied_to(value, params: frozenset[str]) -> str | None:
    """The one of `params` the expression `value` copies host data built right there onto
    (`torch.tensor([n], device=p)`, `torch.from_numpy(a).to(p)`), else None."""
    return _moved_to_param(value, params)


def _moved_to_param(value, params: frozenset[str]) -> str | None:
    """The parameter `value` (an expression) is copied to by its only call that is no host
    builder: `torch.from_numpy(a).to(device)`, or `torch.tensor([n, int(flag)], device=device)`
    of a list written out there. None otherwise."""
    calls = nodes_breadth_first(value, _CALL)
    moves = [call for call in calls if not _host_builder(call)]
    listed = [call for call in moves if not _python_number(call)]
    if len(listed) == 1 and listed[0].args:
        # `int(flag)` counts only as a member of the list (`_plain_member`), nowhere else
        inside = set(map(id, nodes_breadth_first(listed[0].args[0], _CALL)))
        if all(id(call) in inside for call in moves if call is not listed[0]):
            built = _built_from_list(listed[0])
            if built is not None:
                return built if built in params else None
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


def _built_from_list(call) -> str | None:
    """`torch.tensor([...], device=p)` (or `torch.as_tensor`) of a list or tuple written out
    there, whose members are Python numbers and names (`self.num_tokens`, `int(self.flag)`):
    host data, copied to `p` (the name); None for anything else."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr in _FROM_DATA and isinstance(func.value, ast.Name)
            and func.value.id == "torch" and call.args and isinstance(call.args[0], (ast.List, ast.Tuple))):
        return None
    if not all(_plain_member(m) for m in call.args[0].elts):
        return None
    if any(k.arg is None for k in call.keywords):
        return None  # `**kwargs` may carry a device of its own
    device = [k.value for k in call.keywords if k.arg == "device"]
    if len(device) == 1 and isinstance(device[0], ast.Name):
        return device[0].id
    return None


def _plain_member(node) -> bool:
    """A constant, a name or a field (`self.n`), or `int(...)`/`float(...)`/`bool(...)`/`len(...)`
    of one: no indexing, no method call (either could read a device tensor)."""
    if isinstance(node, ast.UnaryOp):
        node = node.operand
    if isinstance(node, ast.Call) and _python_number(node):
        node = node.args[0]
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, (ast.Constant, ast.Name))


def _python_number(call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id in _NUMBERS and len(call.args) == 1 \
        and not call.keywords


def _host_builder(call) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in _HOST_BUILDERS and \
        isinstance(func.value, ast.Name) and func.value.id in _BUILDER_MODULES
