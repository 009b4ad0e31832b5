"""A device a parameter picks: `torch.device("cuda" if not force_cpu_device else "cpu")`.

SGLang's `broadcast_pyobj(data, rank, dist_group=None, src=0, force_cpu_device=True)` builds
every tensor it sends on a local device the flag chooses:

    device = torch.device(platform.device_type if not force_cpu_device else "cpu")
    tensor_size = torch.tensor([0], dtype=torch.long, device=device)
    dist.broadcast(tensor_size, src=src, group=dist_group)
    size = tensor_size.item()

Read alone, `tensor_size` may be on the GPU, so the `torch.tensor(..., device=device)` reads as a
blocking copy and `.item()` as a read-back. But with the flag at its default (every caller in
the tree leaves it there) `device` is the CPU: nothing reaches a GPU. The fact, about code:
a local bound once, to a conditional expression (or `torch.device(...)` of one) whose arms are
`"cpu"` and something else, is a GPU only under the test that takes the other arm; the lines
that build on it, and those that only read tensors built on it, reach a GPU only under that
test. It is one more guarded block for constargs / stepargs, as device_params.py's copies to a
device parameter are: a call whose arguments make the test false is ruled out, a line no
per-step call takes is cold, and a call passing anything else keeps the finding.

Which lines: after the binding, a simple statement that assigns to plain names only (`buf[i] =
t` writes into another object, which may be on the GPU whatever `device` is) and either copies
host data written out there onto that device (device_params.copied_to: `torch.tensor([size],
device=device)`) or reads no name but that device, a local "built on it" (every store of it a
call naming it as `device=` or a `.to(device)` of anything: with `device` the CPU the result is
on the host), a builtin conversion (`int`, `bytes`, `len` ...) or the modules that build host
data (`torch`, `np`): a statement that reads anything else may sync otherwise and is left alone.
"""

from __future__ import annotations

import ast

from .device_params import copied_to, own_statements
from .nodewalk import function_code, every_node

HOST_DEVICE = "cpu"
_CONVERSIONS = frozenset({"int", "float", "bool", "len", "bytes", "list", "tuple", "str"})
_MODULES = frozenset({"torch", "np", "numpy"})
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_GPU = ("gpu",)  # an arm that is no literal host device: may be a GPU whatever the test


def chosen_device_guards(function, params: frozenset, compile_test) -> list[tuple]:
    """[(start, end, test)] for the statements of `function` that reach a GPU only through a
    local device chosen by a test on `params` (parameters never rebound), `test` the compiled
    condition (constargs.compile_test) under which the device is no host device."""
    if not params:
        return []
    code = function_code(function)
    if not any(type(node) is ast.Assign and _host_choice(node.value) for node in code):
        return []  # the common case, decided without the walk below
    bindings: dict[str, list] = {}
    stores: dict[str, int] = {}  # every store of a name: a loop target, `+=`, `with ... as` too
    for node in code:
        if type(node) is ast.Assign:
            for target in node.targets:
                for name in every_node(target):
                    if isinstance(name, ast.Name):
                        bindings.setdefault(name.id, []).append(node)
        elif type(node) is ast.Name and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    # a name also stored otherwise than by a plain assignment is none of ours
    bindings = {name: nodes for name, nodes in bindings.items() if stores.get(name, 0) == len(nodes)}
    found = []
    for name, nodes in bindings.items():
        if len(nodes) != 1 or len(nodes[0].targets) != 1 or not isinstance(nodes[0].targets[0], ast.Name):
            continue
        test = _gpu_test(_unwrap(nodes[0].value), params, compile_test)
        if test is None or test is _GPU:
            continue
        built = _built_on(name, bindings)
        readable = built | {name} | _CONVERSIONS | _MODULES
        start = nodes[0].end_lineno or nodes[0].lineno
        for stmt in own_statements(function.body):
            if stmt.lineno <= start or stmt is nodes[0]:
                continue
            value = getattr(stmt, "value", None)
            if value is None or not _stores_names(stmt):
                continue
            if copied_to(value, frozenset((name,))) == name:  # `torch.tensor([size], device=device)`
                found.append((stmt.lineno, stmt.end_lineno or stmt.lineno, test))
                continue
            reads = {sub.id for sub in every_node(value) if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load)}
            if reads and reads <= readable and reads & (built | {name}) \
                    and not any(isinstance(sub, _NESTED) for sub in every_node(value)):
                found.append((stmt.lineno, stmt.end_lineno or stmt.lineno, test))
    return found


def _stores_names(stmt) -> bool:
    """An assignment to plain names only (or no assignment): `buf[i] = t` or `self.t = t` writes
    into another object, which may be on the GPU whatever `device` is."""
    if isinstance(stmt, ast.Assign):
        return all(isinstance(target, ast.Name) for target in stmt.targets)
    if isinstance(stmt, ast.AnnAssign):
        return isinstance(stmt.target, ast.Name)
    return True


def _host_choice(value) -> bool:
    """A conditional expression (or `torch.device(...)` of one) with a `"cpu"` arm, at any depth."""
    value = _unwrap(value)
    if type(value) is not ast.IfExp:
        return False
    return any(type(arm) is ast.Constant and arm.value == HOST_DEVICE or _host_choice(arm)
               for arm in (value.body, value.orelse))


def _unwrap(value):
    """`torch.device(x)` -> x."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "device" \
            and isinstance(value.func.value, ast.Name) and value.func.value.id == "torch" \
            and len(value.args) == 1 and not value.keywords:
        return value.args[0]
    return value


def _gpu_test(node, params, compile_test):
    """The compiled test under which the device `node` is no host device: None for a node that
    is no conditional choice tested on `params` (or always the host), `_GPU` for an arm that is
    no host literal."""
    if isinstance(node, ast.Constant) and node.value == HOST_DEVICE:
        return None
    if not isinstance(node, ast.IfExp):
        return _GPU
    test = compile_test(node.test, params)
    if test is None:
        return _GPU
    arms = [_gpu_test(arm, params, compile_test) for arm in (node.body, node.orelse)]
    if all(inner is _GPU for inner in arms):
        return _GPU  # `"cuda:1" if a else "cuda"`: no host device either way
    parts = []
    for inner, taken in zip(arms, (test, ("not", test))):
        if inner is _GPU:
            parts.append(taken)
        elif inner is not None:
            parts.append(("and", (taken, inner)))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else ("or", tuple(parts))


def _built_on(device: str, bindings: dict) -> set:
    """The locals every binding of which is a plain assignment of a call on `device`:
    `torch.empty(n, device=device)`, `x.to(device)`."""
    built = set()
    for name, nodes in bindings.items():
        if name == device:
            continue
        if all(len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and _on(node.value, device)
               for node in nodes):
            built.add(name)
    return built


def _on(value, device: str) -> bool:
    if not isinstance(value, ast.Call):
        return False
    named = [k.value for k in value.keywords if k.arg == "device"]
    if isinstance(value.func, ast.Attribute) and value.func.attr == "to" and not named and value.args:
        named = [value.args[0]]
    return len(named) == 1 and isinstance(named[0], ast.Name) and named[0].id == device
