"""The values of the whole-program facts (facts.py records them, wholeprogram.py solves them):
what a call's target is, as far as one file can tell, and where a value lives (`Fact`).

Plain strings and tuples: they are pickled into the lint cache.
"""

from __future__ import annotations

import ast

from . import provenance as P
from .ast_annotations import dotted, factory_class

# A call's target, as far as one file can tell (resolved against the whole tree later):
FUNC = "f"  # ("f", qualified name): a module function, an imported name, a nested function
METHOD = "m"  # ("m", receiver, name): `self.m()`, `cls.m()`, `obj.m()` with obj's class known
PROP = "p"  # ("p", receiver or None, attr): an attribute read that may be a property
# A receiver is (class qualified name, attribute hops, called through the class itself):
# `self.runner.step()` in class A is ("mod.A", ("runner",), False) with method "step"; hops are
# resolved through class field types; a hop ending in "()" is a method called on the object
# (`self.stage().forward(x)` is ("mod.A", ("stage()",), False)), resolved through the class its
# definition's return annotation names (`def stage(self) -> DenoisingStage`).
SUPER = "__super__"
STAR = "*"  # the exports' key of the modules a module re-exports whole (`from .common import *`)
CALLED = "()"


def called_receiver(node, receiver, hops: list, resolve=None) -> tuple | None:
    """`obj.m().x...` with no arguments: `obj`'s receiver with a hop `m()`, the class `m` is
    annotated to return (program.py `returned_class`); None for any other expression, or when
    `obj` is a class itself or already such a call. `Cls(...).x...`: an object the expression
    constructs holds `Cls` (as `obj = Cls(...)` types `obj`), when `resolve` (a dotted name ->
    its qualified name) tells the called name is a class's (`Builder().build(...)`)."""
    made = factory_class(resolve(dotted(node.func) or "")) if resolve and isinstance(node, ast.Call) else None
    if made and made.rsplit(".", 1)[-1][:1].isupper():
        return made, tuple(reversed(hops)), False
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)) or node.args or node.keywords:
        return None
    inner = receiver(node.func.value)
    if inner is None or inner[2] or (inner[1] and inner[1][-1].endswith(CALLED)):
        return None
    return inner[0], (*inner[1], node.func.attr + CALLED, *reversed(hops)), False


def class_receiver(node, receiver, bound) -> tuple | None:
    """`type(self.base_layer)`: the class of that object's receiver, called through the class
    (`type(self.base_layer).forward(self, x)` passes `self` in the method's own place); vLLM's
    LoRA wrappers run their base layer's `forward` so. None for any other expression, or when
    `type` is a local (`bound`: the function's names) or the object's class cannot be told."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
            and len(node.args) == 1 and not node.keywords) or "type" in bound:
        return None
    inner = receiver(node.args[0])
    return (inner[0], inner[1], True) if inner is not None and not inner[2] else None


def required_keywords(args: ast.arguments) -> dict:
    """A function's keyword-only parameters without a default, as a facts entry: a bit mask over
    its `kwonly` names (`{"kwrequired": mask}`, bit i for the i-th; a small int, no new object),
    or nothing where it has none (most functions: no key is kept). A call that passes them
    neither by name nor through `**kwargs` cannot bind to it (callguards.binds)."""
    mask = sum(1 << index for index, default in enumerate(args.kw_defaults) if default is None)
    return {"kwrequired": mask} if mask else {}


Fact = tuple  # (where, parameter or None, call index or None, or NAMED_LIST)
PY_FACT: Fact = (P.PY, None, None)
HOST_FACT: Fact = (P.HOST, None, None)
DEVICE_FACT: Fact = (P.DEVICE, None, None)
UNKNOWN_FACT: Fact = (P.UNKNOWN, None, None)
# Host by a container word of its name only (`neg_masks_list`, provenance.CONTAINER_WORDS): a
# Python list, host data itself, but nothing is known of its items (param_items.py)
NAMED_LIST = "list"
NAMED_LIST_FACT: Fact = (P.HOST, None, NAMED_LIST)


def combine(facts: list[Fact]) -> Fact:
    """An operation on these values: a known device operand makes the result device; else it
    follows a parameter (its device decides), else the most device-like operand."""
    if any(f[0] == P.DEVICE for f in facts):
        return DEVICE_FACT
    for fact in facts:
        if fact[1] is not None or (fact[2] is not None and fact[2] != NAMED_LIST):
            return fact
    return (P.combine(*[f[0] for f in facts]), None, None) if facts else PY_FACT


def operate(facts: list[Fact]) -> Fact:
    """The operands of one operator (`seq_lens_cpu // self.compress_ratio`, `lens_cpu > n`):
    torch does not mix devices, so a known host operand makes the result host data whatever
    another operand follows (a parameter, a call or an attribute of the tree), as the rules'
    walk combines them (provenance.combine); only a known device operand beats it. Not for
    values that are one or the other (`a if c else b`: `combine`)."""
    if HOST_FACT in facts and DEVICE_FACT not in facts:
        return HOST_FACT
    return combine(facts)


def keep_params_made_host(before: dict, env: dict) -> None:
    """After an `if`: a parameter one arm replaces with host data (`if not isinstance(grid_thw,
    torch.Tensor): grid_thw = torch.tensor(grid_thw)`) is still the parameter's data, so what
    the callers pass decides (as analyzer.py's walk has it, branch_merge.keep_param_sources;
    vLLM ernie45_vl's `prepare_encoder_metadata`). Host where it follows the parameter: a Python
    value passed for it becomes host data here (wholeprogram.host_fed), a device tensor stays on
    the device. `before`: the facts before the `if`; `env`: after it, updated in place."""
    for name, fact in before.items():
        if fact[1] is not None and fact[2] is None and P.known_host(env.get(name, fact)[0]) and env.get(name) != fact:
            env[name] = (P.HOST, fact[1], None)
