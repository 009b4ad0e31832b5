"""Type tests a call's own argument decides: a callee's block tested on a parameter's type is not
taken by a call that passes a value of a type the test rules out.

SGLang's `NVFP4KVQuantizeUtil.quantize(tensor, global_scale)` copies a scale to the device only

    if isinstance(global_scale, (int, float)):
        global_scale = torch.tensor([global_scale], dtype=torch.float32, device=tensor.device)

Some callers pass a parameter of their own (their callers decide: numberguards.py decides the
guard once for the whole function, when every call passes a tensor), but the KV pools call
`NVFP4KVQuantizeUtil.quantize(cache_k, self.global_scale)` with a field the tree fills only
with `torch.ones(1, device=device)`: for THESE calls the block never runs, whatever the others
pass. constargs.py decides such tests per call for literal arguments; this module adds the type
tests to its compiled tests and what a call passes, as the caller's source shows it:

* a test (`compile_type_test`): `torch.is_tensor(p)` / `isinstance(p, torch.Tensor)` ("tensor",
  true exactly when `p` is a tensor), `isinstance(p, (int, float))` with number, `str` or `bytes`
  types only ("scalar"), `isinstance(p, (list, tuple))` with any built-in container ("builtin").
  `torch` is the module only where the file imports it so (`import torch [as t]`, `from torch
  import is_tensor, Tensor`); a name of the package's own is no test. `not` and `and`/`or` are
  constargs's.
* an argument (`argument_kind`), recorded among the call's literals as a marker no literal can be:
  TENSOR for a value that is a tensor whatever the path: `torch.<op>(...)` of an op that always
  returns one (`torch.cat`, a factory), a subscript or `.contiguous()`/`.clone()`/`.to(...)` of
  one; ATTR for a plain read `obj.name` (or a subscript of one), decided by the whole
  program (`resolve`): where every store the tree makes into an attribute of that name is a
  device tensor (classinfo.attribute_places, as numberguards's TensorArgs reads the names), the
  value is such a tensor, a list of them (`[torch.zeros(..., device=d) for ...]`) or None (a
  None store is no place): none of them a number, so a "scalar" test is false; the other
  tests stay undecided.

A name bound on two paths (`x = t if c else [0]`, `x = None` then `x = t`) is no TENSOR: the
facts of the whole-program pass join the paths (a list joined with a device tensor reads as a
device tensor), so this reads the caller's source instead, and only the forms above.
"""

from __future__ import annotations

import ast

from . import provenance as P

TENSOR = ("#tensor",)  # a marker among a call's literals: the argument is a tensor
ATTR = "#attr"  # (ATTR, name): the argument reads attribute `name` (resolved by the whole program)
DEVICE_ATTR = ("#device-attr",)  # resolved: a device tensor, a list of them, or None
# a value of two paths, one of them no tensor (`x[:1] if c else [0, 1]`, `p or None`, a local
# bound to `None` or a literal and elsewhere to something else): never a known tensor, whatever
# the whole-program facts (which join the paths to the more device-like) say
MIXED = ("#mixed",)

_SCALARS = frozenset({"int", "float", "complex", "bool", "str", "bytes", "Number", "Real", "Integral",
                      "numbers.Number", "numbers.Real", "numbers.Integral"})
_CONTAINERS = frozenset({"list", "tuple", "dict", "set", "frozenset"})
_TENSOR_TYPES = frozenset({"torch.Tensor", "Tensor"})
# torch functions whose result is always a tensor (the factories, and the joins of tensors)
_TENSOR_OPS = frozenset("tensor as_tensor zeros ones empty full arange linspace eye rand randn randint randperm "
                        "zeros_like ones_like empty_like full_like rand_like randn_like cat concat concatenate "
                        "stack hstack vstack from_numpy".split())
_SAME_TENSOR = frozenset({"contiguous", "clone", "to", "detach", "cuda"})


def torch_names(tree: ast.Module) -> dict:
    """What the file's top-level imports bind to torch: {"module": {names of the torch module},
    "is_tensor": {names of torch.is_tensor}, "Tensor": {names of torch.Tensor}}."""
    found = {"module": set(), "is_tensor": set(), "Tensor": set()}
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.name == "torch":
                    found["module"].add(alias.asname or "torch")
        elif isinstance(stmt, ast.ImportFrom) and stmt.module == "torch" and not stmt.level:
            for alias in stmt.names:
                if alias.name in ("is_tensor", "Tensor"):
                    found[alias.name].add(alias.asname or alias.name)
    return found


def _type_name(node, torch: dict) -> str | None:
    if isinstance(node, ast.Name):
        return "torch.Tensor" if node.id in torch["Tensor"] else node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id in torch["module"] and node.attr == "Tensor":
            return "torch.Tensor"
        return f"{node.value.id}.{node.attr}"
    return None


def compile_type_test(node, params, torch: dict | None) -> tuple | None:
    """("type", p, "tensor" | "scalar" | "builtin") of a type test on a parameter; None otherwise."""
    if torch is None or not isinstance(node, ast.Call) or node.keywords or not node.args \
            or not isinstance(node.args[0], ast.Name) or node.args[0].id not in params:
        return None
    param, func = node.args[0].id, node.func
    if len(node.args) == 1:
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr == "is_tensor"
                and func.value.id in torch["module"]) or (isinstance(func, ast.Name) and func.id in torch["is_tensor"]):
            return ("type", param, "tensor")
        return None
    if not (isinstance(func, ast.Name) and func.id == "isinstance" and len(node.args) == 2):
        return None
    kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
    names = {_type_name(kind, torch) for kind in kinds}
    if not names or None in names:
        return None
    if names <= _TENSOR_TYPES:
        return ("type", param, "tensor")
    if names <= _SCALARS:
        return ("type", param, "scalar")
    if names <= _SCALARS | _CONTAINERS:
        return ("type", param, "builtin")
    return None


def argument_kind(node, torch: dict | None, fields=frozenset(), depth: int = 0):
    """TENSOR, (ATTR, name) or None for an argument expression (see the module's doc). A name
    is none of them: a local may hold another type on another path, and a parameter's
    annotation is no promise (`scale: torch.Tensor = None`); a parameter passed on unchanged is
    its own callers' to decide (constargs `derive`). A field read is recorded only for the names
    in `fields` (those the caller's file gives only device tensors: the rest could not be
    decided, and every `self.x` argument of the tree would be kept in the cache)."""
    if torch is None or depth > 4:
        return None
    if isinstance(node, ast.Attribute):
        return (ATTR, node.attr) if node.attr in fields and isinstance(node.value, (ast.Name, ast.Attribute)) else None
    if isinstance(node, ast.Subscript):
        return argument_kind(node.value, torch, fields, depth + 1)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        func = node.func
        if isinstance(func.value, ast.Name) and func.value.id in torch["module"]:
            return TENSOR if func.attr in _TENSOR_OPS else None
        if func.attr in _SAME_TENSOR:
            inner = argument_kind(func.value, torch, fields, depth + 1)
            return inner if inner == TENSOR else None
    return None


_PLAIN_VALUES = (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)


def plain_bound(nodes) -> frozenset:
    """Names a function binds to a plain Python value somewhere (`x = None`, `idx = [0, 1]`):
    where such a name is also bound otherwise, it may hold either (`mixed_argument`)."""
    return frozenset(t.id for node in nodes if type(node) is ast.Assign and isinstance(node.value, _PLAIN_VALUES)
                     for t in node.targets if type(t) is ast.Name)


def mixed_argument(node, rebound: frozenset, plain: frozenset) -> bool:
    """An argument that may be a tensor on one path and not on another (MIXED): a conditional
    expression or `and`/`or`, or a local bound more than once, once to a plain value."""
    if isinstance(node, (ast.IfExp, ast.BoolOp)):
        return True
    return type(node) is ast.Name and node.id in plain and node.id in rebound


def device_names(results) -> set:
    """Attribute names every store the tree makes into is a device tensor (by the stores'
    places, classinfo.attribute_places): numberguards's TensorArgs reads attributes so too."""
    places: dict[str, set] = {}
    for result in results.values():
        for name, wheres in (getattr(result, "attr_places", None) or {}).items():
            places.setdefault(name, set()).update(wheres)
    return {name for name, wheres in places.items() if {w for w in wheres if isinstance(w, int)} == {P.DEVICE}}


def resolve(value, names: set, unknown):
    """A recorded argument marker as the evaluation reads it: (ATTR, name) is DEVICE_ATTR where
    `name` is a device attribute, else `unknown`; other values as they are."""
    if isinstance(value, tuple) and value[:1] == (ATTR,):
        return DEVICE_ATTR if value[1] in names else unknown
    return value


def evaluate_type(kind: str, value):
    """True / False / None of a type test ("tensor", "scalar", "builtin") for a resolved value
    (a literal or a marker; the caller has already answered None for an unknown one)."""
    if value == TENSOR:
        return kind == "tensor"
    if value == DEVICE_ATTR:
        return False if kind == "scalar" else None
    if isinstance(value, tuple):
        return None
    if kind == "tensor":
        return False  # a literal (a number, a string, a bool, None) is never a tensor
    return None
