"""Lines that run only when a parameter is not a tensor, which callers passing tensors rule out.

SGLang's `NVFP4KVQuantizeUtil.quantize(tensor, global_scale)` copies a scale to the device
(`torch.tensor([global_scale], device=tensor.device)`) only `if isinstance(global_scale, (int,
float)):`; every caller in the tree passes a tensor (a `torch.ones(1, device=...)` field, a slice
of a device table, a `Parameter`), so the copy never runs for them. The fact: a block under
`isinstance(p, <built-in non-tensor types>)` (numbers, `list`, `tuple`, ...), `not isinstance(p,
torch.Tensor)` or `not torch.is_tensor(p)` (torch's own), alone or as a part of an `and`, runs
only when `p` is not a tensor; when every resolved call in the tree passes a value the linter
knows is a tensor for `p`, the block never runs.

Read per file with the None-guards (branches.py records it among `guards`, the parameter marked
with `NUMBER`); decided in callguards.guarded_lines from the facts of the calls' arguments. A call
the tree makes by name only (a method on a receiver of unknown class) counts by the caller's
record of what it passes; with none it leaves the block undecided. A call on a module a
function imports for itself (`import gguf; gguf.dequantize(...)`) is no call by name
(local_modules.py). A caller's own parameter whose annotation is a union with a member other
than a tensor (`timestep: torch.Tensor | float | int`, `Optional[torch.Tensor]`) has a tensor's
fact but is no known tensor (`number_params`): its callers decide, as for an unannotated one.
"""

from __future__ import annotations

import ast

from . import provenance as P
from .dispatched import dispatched_calls
from .fact_values import PROP
from .typeargs import MIXED

NUMBER = "#number:"  # a guard's parameter so marked: the block runs only when it is not a tensor
_NUMBER_TYPES = frozenset({"int", "float", "complex", "bool", "Number", "Real", "Integral",
                           "numbers.Number", "numbers.Real", "numbers.Integral"})
# built-in containers no tensor is an instance of: `isinstance(p, list)` is false for a tensor
_NON_TENSOR_TYPES = _NUMBER_TYPES | frozenset({"list", "tuple", "dict", "set", "frozenset", "str", "bytes"})
_TENSOR_TYPES = frozenset({"torch.Tensor", "Tensor"})


def _name(node) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _isinstance(node) -> tuple[str, list] | None:
    """`isinstance(p, T)` / `isinstance(p, (T1, T2))`: (p, [type names]); None otherwise."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
            and len(node.args) == 2 and not node.keywords and isinstance(node.args[0], ast.Name)):
        return None
    kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
    return node.args[0].id, [_name(kind) for kind in kinds]


def _is_tensor(node, aliases: dict) -> str | None:
    """`torch.is_tensor(p)` (`torch` the module, or `is_tensor` imported from it), true exactly
    when `p` is a tensor: p; None otherwise."""
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords
            and isinstance(node.args[0], ast.Name)):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.attr == "is_tensor":
        source = aliases.get(func.value.id)
    elif isinstance(func, ast.Name):
        source = aliases.get(func.id, "").removesuffix(".is_tensor") if func.id == "is_tensor" else None
    else:
        return None
    return node.args[0].id if source == "torch" else None


def number_param(test, aliases: dict) -> str | None:
    """The parameter a test is true for only when it is not a tensor: `isinstance(p, (int,
    float))` (number types only), `not isinstance(p, torch.Tensor)`, `not torch.is_tensor(p)`."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    if negated and (param := _is_tensor(test.operand, aliases)) is not None:
        return param
    found = _isinstance(test.operand if negated else test)
    if found is None:
        return None
    param, kinds = found
    if negated:
        return param if kinds and all(kind in _TENSOR_TYPES for kind in kinds) else None
    return param if kinds and all(kind in _NON_TENSOR_TYPES for kind in kinds) else None


def number_guard(walk, stmt: ast.If, function: str) -> None:
    """Record the body of `if isinstance(p, (int, float)):` (or an `and` with such a part) on a
    parameter `p` among the function's guards, the parameter marked `NUMBER`."""
    test = stmt.test
    tests = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in tests:
        param = number_param(part, walk.aliases)
        if param is None or param in ("self", "cls") or param not in walk.params.get(function, ()):
            continue
        end = getattr(stmt.body[-1], "end_lineno", None) or stmt.body[-1].lineno
        walk.guards.setdefault(walk.qualify(function), []).append((stmt.body[0].lineno, end, NUMBER + param))
        return


def _union_members(node) -> list | None:
    """The members of a union annotation (`A | B`, `Union[A, B]`, `Optional[A]`, `"A | B"`),
    flattened; None for any other annotation."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if "|" not in node.value and "Union" not in node.value and "Optional" not in node.value:
            return None  # `"ForwardBatch"`: one type, not parsed
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return (_union_members(node.left) or [node.left]) + (_union_members(node.right) or [node.right])
    if isinstance(node, ast.Subscript) and (_name(node.value) or "").rsplit(".", 1)[-1] in ("Union", "Optional"):
        members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        found = []
        for member in members:
            found.extend(_union_members(member) or [member])
        if _name(node.value).endswith("Optional"):
            found.append(ast.Constant(None))
        return found
    return None


def _admits_other(annotation) -> bool:
    """A union annotation with a member that is no tensor type (`Tensor | float | int`,
    `Optional[Tensor]`, `Union[Tensor, list[int]]`): a caller may pass that instead."""
    members = _union_members(annotation)
    return members is not None and any(_name(member) not in _TENSOR_TYPES for member in members)


def number_params(args: ast.arguments) -> dict:
    """A function's parameters annotated with a union that admits something other than a tensor,
    as a facts entry: a bit mask over its `params` then `kwonly` names (`{"non_tensor": mask}`), or
    nothing where it has none (most functions: no key is kept). Such a parameter's fact says
    tensor where a tensor is one of the members (`timestep: torch.Tensor | float | int`), yet a
    caller may pass a number, a list or None."""
    every = args.posonlyargs + args.args + args.kwonlyargs
    mask = sum(1 << index for index, arg in enumerate(every) if arg.annotation is not None and _admits_other(arg.annotation))
    return {"non_tensor": mask} if mask else {}


class TensorArgs:
    """Whether a call's argument is known to be a tensor (on the device or of unknown device):
    by its fact; read from an attribute the tree only ever gives device tensors (or a slice of
    one: `self.k_scales[i:i + 1]`, as field_tables.py decides by the name); or the
    caller's own parameter, passed on unchanged, when every call of the caller passes a tensor
    for it (`quantize_and_store(..., k_scale)` hands its callers' `layer.k_scale` on)."""

    DEPTH = 3  # callers followed up through parameters passed on unchanged

    def __init__(self, program, edges: dict, results: dict, binds=None) -> None:
        self.program, self.edges, self.results, self.binds = program, edges, results, binds
        self._device = self._callers = None
        # {path: {(line, column): {position or keyword: literal}}}: the literal arguments each
        # call passes (constargs.file_const_guards records them for every call in the file)
        self.literals = {path: table for path, result in results.items()
                         if (table := getattr(result, "const_literals", None))}

    def passed(self, caller: str, call, at) -> object:
        """What the caller's source shows the call passes at `at` (a position or a keyword): a
        literal, a marker (typeargs.py), or None where it shows nothing."""
        table = self.literals.get(self.program.path_of.get(caller))
        found = table.get((call.line, call.column)) if table else None
        return found.get(at) if found else None

    def passes_argument(self, caller: str, call, position, keyword, fact, depth: int = 0) -> bool:
        """The call's argument at (`position`, `keyword`) is known to be a tensor: its fact says
        so and the caller's source does not show a value of two paths (MIXED), which the facts
        join to the more device-like."""
        return self.passed(caller, call, keyword if keyword is not None else position) != MIXED \
            and self.passes(caller, fact, depth)

    def passes(self, caller: str, fact, depth: int = 0) -> bool:
        if P.is_tensor_like(fact[0]) and not (fact[1] is not None and self._may_be_other(caller, fact[1])):
            return True
        if fact[1] is not None:
            return fact[2] is None and depth < self.DEPTH and self._param(caller, fact[1], depth + 1)
        index = fact[2]
        calls = self.program.functions[caller]["calls"]
        if not isinstance(index, int) or index >= len(calls) or calls[index].target[0] != PROP:
            return False
        return calls[index].target[2] in self._device_names()

    def by_name(self, caller: str, line: int, target: str, guard: str) -> bool:
        """A call by name on `line` (a method on a receiver of unknown class) passes a tensor
        for the guarded parameter of `target`, by the caller's record of that call; False when
        no record tells (a receiver the file could not name is not recorded)."""
        return self._named(caller, line, target, guard[len(NUMBER):], 0)

    def _named(self, caller: str, line: int, target: str, param: str, depth: int) -> bool:
        name, params = target.rsplit(".", 1)[-1], self.program.functions[target]["params"]
        shift = 1 if params and params[0] in ("self", "cls") else 0
        records = [call for call in self.program.functions[caller]["calls"] if call.line == line and call.name == name]
        return bool(records) and all(self._passes_for(caller, call, shift, params, param, depth) for call in records)

    def _passes_for(self, caller: str, call, shift: int, params: list, param: str, depth: int) -> bool:
        found = next(((position, keyword, fact) for position, keyword, fact in call.args if keyword == param or (
            position is not None and position >= 0 and position + shift < len(params) and params[position + shift] == param)), None)
        if found is None:
            return False
        return self.passes_argument(caller, call, *found, depth)

    def _may_be_other(self, function: str, param: str) -> bool:
        """`function`'s annotation of `param` admits something other than a tensor (`number_params`)."""
        facts = self.program.functions[function]
        mask = facts.get("non_tensor", 0)
        if not mask:
            return False
        names = list(facts["params"]) + list(facts.get("kwonly", ()))
        return param in names and bool(mask >> names.index(param) & 1)

    def _param(self, function: str, param: str, depth: int) -> bool:
        """Every resolved call of `function` (at least one) passes a tensor for `param`, and so
        does every call by name that may land in it (a method: `_named`, by the call's record)."""
        if self._callers is None:
            self._callers = {}
            for caller, out in self.edges.items():
                for call, target, shift in out:
                    self._callers.setdefault(target, []).append((caller, call, shift))
        found = self._callers.get(function)
        if not found:
            return False
        params = self.program.functions[function]["params"]
        if not all(self._passes_for(caller, call, shift, params, param, depth) for caller, call, shift in found):
            return False
        named = dispatched_calls(self.program, self.edges, self.results, (function,), self.binds) if self.binds else ()
        return all(self._named(caller, line, function, param, depth) for caller, line, _, _ in named)

    def _device_names(self) -> set:
        if self._device is None:
            places: dict[str, set] = {}
            for result in self.results.values():
                for name, wheres in (getattr(result, "attr_places", None) or {}).items():
                    places.setdefault(name, set()).update(wheres)
            self._device = {name for name, wheres in places.items() if {w for w in wheres if isinstance(w, int)} == {P.DEVICE}}
        return self._device
