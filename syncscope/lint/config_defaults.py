"""Switches a configuration's `__post_init__` settles, and the host device such a switch picks.

    # config: a field declared None, settled once the configuration is built
    if self.scheduler_config.async_scheduling is None:
        if self.model_config is not None and self.model_config.runner_type == "pooling":
            self.scheduler_config.async_scheduling = False
        else:
            self.scheduler_config.async_scheduling = True
    if self.parallel_config.disable_nccl_for_dp_synchronization is None:
        if self.scheduler_config.async_scheduling:
            self.parallel_config.disable_nccl_for_dp_synchronization = True
        else:
            self.parallel_config.disable_nccl_for_dp_synchronization = False

    # a helper: the device the switch picks, returned with other values
    def _get_device_and_group(parallel_config):
        device = get_dp_group().device
        if parallel_config.disable_nccl_for_dp_synchronization:
            device = "cpu"
        return device, group

    device, group = _get_device_and_group(parallel_config)
    tensor = tensor_cpu.to(device)          # on the host under the default configuration

(vLLM's data-parallel exchange.) The facts, about code:
* A `__post_init__` block `if <path>.F is None:` whose body gives `<path>.F` a literal directly,
  or in every arm of an `if`/`elif`/`else` chain, settles F. Under the default configuration F is
  the literal of the first arm that holds: an arm tested on another settled switch (`<path>.G`,
  `not <path>.G`) holds by G's default; an arm tested on anything else (a comparison, a call, a
  local, `and`/`or`) names an exception to the default (a pooling model, an executor, a
  platform) and is passed over; the `else` arm holds. An arm tested on an attribute path that no
  `__post_init__` settles leaves F undecided, and so do two settlements that differ.
* Switches are keyed by the last two names of the path (`parallel_config.F`): a read of
  `parallel_config.F` or `self.parallel_config.F` is the switch `self.parallel_config.F` settles.
* A function whose only `return`, its last statement, gives a tuple names a host device in
  element k when that element is a local whose last binding before the return is a host device
  literal (`"cpu"`, `torch.device("cpu")`), or an `if <switch>:` (no `else`, no `raise`) whose
  body binds it so, where the switch is on by default. Any other binding of the local (a loop,
  `with`, a walrus, an unpacking, in another block) decides nothing.
* `x.to(d)` where `d` is unpacked from element k of such a call is on the host
  (fact_devices.copy_target records the element, wholeprogram.Solver.value asks here).
"""

from __future__ import annotations

import ast

from .ast_annotations import dotted
from .vocabulary import literal_device_place
from . import provenance as P
from .nodewalk import every_node

SETTLES = "settles"  # function facts: {switch key: ((test, literal), ...)} of a `__post_init__`
DEVICE_RETURNS = "device_returns"  # function facts: {k: None (always) or (switch key, polarity)}
EXCEPTION = "?"  # an arm tested on something other than a switch


def note(facts: dict, node) -> None:
    """Record in a function's facts what this module reads of it (nothing, for most functions)."""
    if node.name == "__post_init__":
        settles = _settles(node)
        if settles:
            facts[SETTLES] = settles
    if len(facts["returns"]) == 1 and facts["tuple_returns"] and isinstance(node.body[-1], ast.Return):
        found = _device_returns(node)
        if found:
            facts[DEVICE_RETURNS] = found


def switch_key(node) -> str | None:
    """`a.b.F` -> `b.F`: a switch read off a configuration object (not `self.F`, a class's own)."""
    name = dotted(node) if isinstance(node, ast.Attribute) else None
    parts = name.split(".") if name else []
    return ".".join(parts[-2:]) if len(parts) >= 2 and parts[-2] != "self" else None


def _test(node):
    """(switch key, polarity) of `<path>.F` / `not <path>.F`; EXCEPTION for anything else."""
    polarity = True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        node, polarity = node.operand, False
    key = switch_key(node)
    return (key, polarity) if key else EXCEPTION


def _literal(stmts: list, key: str, used: set):
    """What the last top-level `<path>.F = ...` of these statements gives: None when none does,
    `(literal,)`, or `()` for a value that is no literal. Each such statement goes into `used`."""
    found = None
    for stmt in stmts:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and switch_key(stmt.targets[0]) == key:
            found = (stmt.value.value,) if isinstance(stmt.value, ast.Constant) else ()
            used.add(id(stmt))
    return found


def _settles(node) -> dict:
    """{key: arms}, or {key: None} for a switch this method settles otherwise (a value that is no
    literal, an arm without one, two settlements that differ, a store outside them)."""
    out, used = {}, set()
    for block in every_node(node):
        if not (isinstance(block, ast.If) and isinstance(block.test, ast.Compare) and len(block.test.ops) == 1
                and isinstance(block.test.ops[0], ast.Is) and isinstance(block.test.comparators[0], ast.Constant)
                and block.test.comparators[0].value is None):
            continue
        key = switch_key(block.test.left)
        if key is None:
            continue
        direct = _literal(block.body, key, used)
        arms = ((None, direct[0]),) if direct else None if direct == () else _chain(block.body, key, used)
        out[key] = arms if out.get(key, arms) == arms else None
    for store in every_node(node):
        targets = store.targets if isinstance(store, ast.Assign) else [store.target] \
            if isinstance(store, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            key = switch_key(target)
            if key in out and id(store) not in used:
                out[key] = None
    return out


def _chain(body: list, key: str, used: set) -> tuple | None:
    """The arms of the first top-level `if`/`elif`/`else` chain of `body` every arm of which
    gives the switch a literal; None when there is none."""
    for stmt in body:
        if not isinstance(stmt, ast.If):
            continue
        arms, current = [], stmt
        while True:
            found = _literal(current.body, key, used)
            if not found:
                break
            arms.append((_test(current.test), found[0]))
            if len(current.orelse) == 1 and isinstance(current.orelse[0], ast.If):
                current = current.orelse[0]
                continue
            last = _literal(current.orelse, key, used) if current.orelse else None
            if last:
                return tuple(arms) + ((None, last[0]),)
            break
    return None


def _host_device(value) -> bool:
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return literal_device_place(value.value) == P.HOST
    return isinstance(value, ast.Call) and dotted(value.func) in ("torch.device", "device") \
        and len(value.args) == 1 and _host_device(value.args[0])


def _stores(stmt, name: str) -> bool:
    return any((isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))
               or (isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names) for n in every_node(stmt))


def _binds(stmt, name: str):
    """(host device literal?) of a top-level `name = value`; None for a statement that is not one."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name) \
            and stmt.targets[0].id == name:
        return _host_device(stmt.value)
    return None


def _device_local(body: list, name: str):
    """None: not a host device; True: always one; (key, polarity): where that switch holds."""
    state = None
    for stmt in body:
        if not _stores(stmt, name):
            continue
        bound = _binds(stmt, name)
        if bound is not None:
            state = True if bound else None
            continue
        if not (isinstance(stmt, ast.If) and not stmt.orelse) or any(isinstance(n, ast.Raise) for n in every_node(stmt)):
            return None
        test = _test(stmt.test)
        last = [s for s in stmt.body if _stores(s, name)]
        if test == EXCEPTION or len(last) != 1 or _binds(last[0], name) is not True:
            return None
        if state is not True:  # host after the `if` only where the switch holds
            state = test if state is None else None
    return state


def _device_returns(node) -> dict:
    value = node.body[-1].value
    if not isinstance(value, ast.Tuple):
        return {}
    body = node.body[:-1]
    found = {}
    for k, element in enumerate(value.elts):
        if isinstance(element, ast.Name):
            state = _device_local(body, element.id)
            if state is not None:
                found[k] = None if state is True else state
    return found


def switch_defaults(functions: dict) -> dict[str, object]:
    """{switch key: its value under the default configuration} for the switches decided."""
    settled: dict[str, tuple | None] = {}
    for facts in functions.values():
        for key, arms in (facts.get(SETTLES) or {}).items():
            settled[key] = arms if settled.get(key, arms) == arms else None
    defaults: dict[str, object] = {}
    changed = True
    while changed:
        changed = False
        for key, arms in settled.items():
            if arms is not None and key not in defaults:
                decided = _settle(arms, defaults)
                if decided is not None:
                    defaults[key] = decided[0]
                    changed = True
    return defaults


def _settle(arms: tuple, defaults: dict):
    """(value,) of the first arm that holds by default; None while a switch it reads is undecided."""
    for test, literal in arms:
        if test is None:
            return (literal,)
        if test == EXCEPTION:
            continue
        key, polarity = test
        if key not in defaults:
            return None
        if bool(defaults[key]) == polarity:
            return (literal,)
    return None


def host_device_elements(functions: dict) -> dict[str, frozenset]:
    """{function: the elements of its returned tuple that name the host's device by default}."""
    found = [(qualname, facts[DEVICE_RETURNS]) for qualname, facts in functions.items() if facts.get(DEVICE_RETURNS)]
    if not found:
        return {}
    defaults = switch_defaults(functions)
    out = {}
    for qualname, elements in found:
        host = frozenset(k for k, need in elements.items()
                         if need is None or (need[0] in defaults and bool(defaults[need[0]]) == need[1]))
        if host:
            out[qualname] = host
    return out
