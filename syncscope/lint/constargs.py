"""Syncs a caller's constant arguments rule out: a callee that syncs only under a test on its
parameters does not sync for a call whose literal arguments make that test false.

`_fmha_sm100_plan(..., num_kv_splits=1)` calls a planner that copies its cost table to the host
only `if num_kv_splits < 1 and ...:`; `set_forward_context(None, vllm_config)` coordinates DP
(a sync) only `if ... and (attn_metadata is not None or num_tokens is not None):`. Other
callers may pass values that take the branch, so the branch is not cold (flagguards.py decides
that over all callers); this call alone is ruled out. Read per file (`file_const_guards`: each
function's `if` tests on its parameters, compiled to small tuples, and the literal arguments of
each call); decided in the whole-program pass (wholeprogram.py asks `ruled_out` for each call
into a function whose sync lies under such a test).

A test is evaluated three-valued from the call's literals and the parameters' literal defaults
(a parameter the call leaves out has its default; one it passes anything else, or that may come
through `*args` / `**kwargs`, is unknown): `not`, `and`, `or`, `p`, `p is None`, `p is not None`,
`p < 1` (any comparison of a parameter with a literal). Only a test that is false rules the
call out. Nested tests: a line under several is ruled out when any of them is false.

A caller that passes its own parameter on unchanged (`get_top_logprobs(..., no_copy_to_cpu)` ->
`get_top_logprobs_raw(..., no_copy_to_cpu=no_copy_to_cpu)`) hands the decision to its own
callers: `file_const_guards` also records those pass-throughs (a bare parameter name the
function never rebinds), and stepargs.py follows them up the per-step callers.

The blocks also include the statements after an early exit (`if info is None: return None`,
guardblocks.py) and a conditional expression's arm (`row if no_copy_to_cpu else row.tolist()`,
exprguards.py), and nested functions are read on their own: a test on a parameter of the
function they are nested in (a closure, `CLOSURE`) is, for that function's call into them, a
test on its own parameter (SGLang's `MoeRunner.run(..., lora_info=None)` and its nested
`_maybe_build_lora_hooks`).

Everything recorded is plain tuples and dicts: it is pickled into the lint cache.
"""

from __future__ import annotations

import ast
import operator
from collections import Counter

from .device_choice import chosen_device_guards
from .device_params import device_param_guards
from .exprguards import ifexp_blocks
from .flag_locals import flag_tests
from .guardblocks import early_exits, statement_blocks, stored_before
from .nodewalk import DEFINITIONS, function_code, own_nodes
from .typeargs import (MIXED, TENSOR, argument_kind, compile_type_test, device_names, evaluate_type, mixed_argument,
                       plain_bound, resolve, torch_names)

UNKNOWN = object()  # a value the call does not fix (never pickled: only used while evaluating)
NO_DEFAULT = ("nodefault",)
# a parameter of an enclosing function a nested one reads (never passed by a call): the
# enclosing function's call into it hands it on unchanged, any other call leaves it unknown
CLOSURE = ("closure",)
_IF_OR_CALL = frozenset({ast.If, ast.Call})
_BINDINGS = frozenset({ast.Assign})  # (nodewalk.CODE_KINDS holds no AnnAssign)
_NAME = frozenset({ast.Name})
_STORE = (ast.Store, ast.Del)
_OPS = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_APPLY = {"lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
          "eq": operator.eq, "ne": operator.ne}
_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def _literal(node):
    """A literal's value (numbers, strings, booleans, None; `-1`), else UNKNOWN."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)) and not isinstance(node.operand.value, bool):
        return -node.operand.value
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, type(None))):
        return node.value
    return UNKNOWN


def compile_test(node, params, torch: dict | None = None, flags: dict | None = None) -> tuple | None:
    """The test as a tuple tree over `params`, or None when no part of it reads one. With
    `torch` (typeargs.torch_names of the file), a type test on a parameter too; with `flags`
    (flag_locals.py), a local flag set only under parameter tests, as what it needs."""
    if isinstance(node, ast.BoolOp):
        parts = [compile_test(v, params, torch, flags) or ("?",) for v in node.values]
        if all(p == ("?",) for p in parts):
            return None
        return ("and" if isinstance(node.op, ast.And) else "or", tuple(parts))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = compile_test(node.operand, params, torch, flags)
        return None if inner is None else ("not", inner)
    if isinstance(node, ast.Call):
        return compile_type_test(node, params, torch)
    if isinstance(node, ast.Name) and flags and node.id in flags:
        return flags[node.id]
    if isinstance(node, ast.Name) and node.id in params:
        return ("truth", node.id)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, op, right = node.left, node.ops[0], node.comparators[0]
        flipped = False
        if not (isinstance(left, ast.Name) and left.id in params):
            left, right, flipped = right, left, True
        if not (isinstance(left, ast.Name) and left.id in params):
            return None
        value = _literal(right)
        if value is UNKNOWN:
            return None
        if isinstance(op, (ast.Is, ast.IsNot)) and value is None:
            return ("none", left.id, isinstance(op, ast.Is))
        name = _OPS.get(type(op))
        if name is None or value is None:
            return None
        return ("cmp", left.id, _FLIP[name] if flipped else name, value)
    return None


class PassedOn:
    """What a call passes for a parameter when it hands on one of its own (stepargs.py): the
    caller's parameter name (never pickled: only used while evaluating)."""
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def evaluate(test: tuple, env: dict):
    """True / False / None (unknown) of a compiled test for parameter values `env`."""
    kind = test[0]
    if kind == "?":
        return None
    if kind == "k":  # a part `substitute` decided
        return test[1]
    if kind == "not":
        inner = evaluate(test[1], env)
        return None if inner is None else not inner
    if kind in ("and", "or"):
        decisive = kind == "or"
        values = [evaluate(t, env) for t in test[1]]
        if decisive in values:
            return decisive
        return None if None in values else (not decisive)
    value = env.get(test[1], UNKNOWN)
    if value is UNKNOWN or isinstance(value, PassedOn):
        return None
    if kind == "type":
        return evaluate_type(test[2], value)
    if isinstance(value, tuple):  # a type marker (typeargs.py): only a tensor is known not None
        return (not test[2]) if kind == "none" and value == TENSOR else None
    if kind == "truth":
        return bool(value)
    if kind == "none":
        return (value is None) == test[2]
    try:
        return bool(_APPLY[test[2]](value, test[3]))
    except TypeError:  # `"auto" < 1`: a comparison Python refuses; not ours to decide
        return None


def substitute(test: tuple, env: dict) -> tuple:
    """The test as the caller sees it: a parameter the call fixes (a literal, a literal default)
    decides its part (`("k", bool)`), one it passes on from its own parameters is renamed to
    that (`PassedOn`), any other is unknown (`("?",)`)."""
    kind = test[0]
    if kind in ("?", "k"):
        return test
    if kind == "not":
        inner = substitute(test[1], env)
        return ("k", not inner[1]) if inner[0] == "k" else inner if inner[0] == "?" else ("not", inner)
    if kind in ("and", "or"):
        decisive = kind == "or"
        parts = [substitute(t, env) for t in test[1]]
        if ("k", decisive) in parts:
            return ("k", decisive)
        parts = [p for p in parts if p[0] != "k"]
        if not parts:
            return ("k", not decisive)
        if all(p[0] == "?" for p in parts):
            return ("?",)
        return (kind, tuple(parts))
    value = env.get(test[1], UNKNOWN)
    if isinstance(value, PassedOn):
        return (kind, value.name) + tuple(test[2:])
    decided = evaluate(test, {test[1]: value})
    return ("?",) if decided is None else ("k", decided)


def test_params(test: tuple) -> set:
    """The parameters a compiled test still reads."""
    kind = test[0]
    if kind in ("?", "k"):
        return set()
    if kind == "not":
        return test_params(test[1])
    if kind in ("and", "or"):
        return set().union(*(test_params(t) for t in test[1]))
    return {test[1]}


def render(test: tuple) -> str:
    """A compiled test as Python source, for the reason a report gives."""
    kind = test[0]
    if kind == "?":
        return "..."
    if kind == "k":
        return str(test[1])
    if kind == "not":
        inner = render(test[1])
        return f"not ({inner})" if test[1][0] in ("and", "or") else f"not {inner}"
    if kind in ("and", "or"):
        return f" {kind} ".join(f"({render(t)})" if t[0] in ("and", "or") else render(t) for t in test[1])
    name = test[1] if isinstance(test[1], str) else test[1][1]  # a key of `**kwargs`: its name
    if kind == "truth":
        return name
    if kind == "type":
        return {"tensor": f"torch.is_tensor({name})", "scalar": f"isinstance({name}, <number>)",
                "builtin": f"isinstance({name}, <built-in type>)"}[test[2]]
    if kind == "none":
        return f"{name} is {'' if test[2] else 'not '}None"
    symbol = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}[test[2]]
    return f"{name} {symbol} {test[3]!r}"


def _params(function) -> dict:
    """name -> (position or None for keyword-only, literal default or NO_DEFAULT)."""
    args = function.args
    positional = args.posonlyargs + args.args
    out = {}
    offset = len(positional) - len(args.defaults)
    for index, arg in enumerate(positional):
        default = args.defaults[index - offset] if index >= offset else None
        value = _literal(default) if default is not None else UNKNOWN
        out[arg.arg] = (index, NO_DEFAULT if default is None else (("v", value) if value is not UNKNOWN else ("?",)))
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        value = _literal(default) if default is not None else UNKNOWN
        out[arg.arg] = (None, NO_DEFAULT if default is None else (("v", value) if value is not UNKNOWN else ("?",)))
    return out


def _stores(function) -> list:
    """The names the function's own body stores into or deletes, as `Name` nodes (a parameter
    rebound is no pass-through; where it is, guardblocks.stored_before reads the lines). The
    definitions among the body's own statements are read too (`own_nodes`'
    enter_block_definitions); in no particular order: the readers take them as a set."""
    stores = [sub for sub in function_code(function) if type(sub) is ast.Name and isinstance(sub.ctx, _STORE)]
    for stmt in function.body:
        if type(stmt) in DEFINITIONS:
            stores.extend(sub for sub in own_nodes([stmt], _NAME) if isinstance(sub.ctx, _STORE))
    return stores


def file_const_guards(tree: ast.Module, module: str | None, library=None, places=None) -> tuple[dict, dict, dict]:
    """({function: (parameters, [(start, end, test)])} of the `if` blocks tested on parameters
    (and of the functions that pass a parameter on, with no blocks),
    {(line, column): {position or keyword: literal}} of the calls passing literals,
    {(line, column): {position or keyword: parameter}} of the calls passing on a parameter of
    their function unchanged). With the library facts, a local bound once to a decided test
    (held_tests.function_locals: `check = ps > 1 and self.alloc.debug_mode`) passes its value
    like a literal: `get_and_clear_swa_pages(..., check_page_mappings=check)`. With `places`
    (the file's classinfo.attribute_places), an argument of a type the caller's source shows
    is recorded too (typeargs.py): a tensor, or a read of an attribute this file gives only
    device tensors (the whole program decides it over every file's stores)."""
    decided = None
    if library is not None:
        from .branches import Conditions
        from .held_tests import function_locals

        decided = Conditions(library).evaluate
    guards: dict[str, tuple] = {}
    literals: dict[tuple, dict] = {}
    passes: dict[tuple, dict] = {}
    torch = torch_names(tree)
    torch = torch if torch["module"] or torch["is_tensor"] or torch["Tensor"] else None
    local_device = device_names({None: _Places(places)}) if places and torch is not None else frozenset()

    def function(node, local: str, enclosing: frozenset = frozenset()) -> None:
        params = _params(node)
        stores = _stores(node)
        rebound = frozenset(sub.id for sub in stores)
        # names stored more than once: they may hold another value on another path
        twice = frozenset(name for name, count in Counter(sub.id for sub in stores).items() if count > 1)
        for name in sorted(enclosing - set(params) - rebound):
            params[name] = (None, CLOSURE)
        names = frozenset(params) - {"self", "cls"}
        kept = names - rebound if names else frozenset()
        # `**kwargs` of its own, handed on whole: what its callers put in it reaches the callee
        own_kwargs = node.args.kwarg.arg if node.args.kwarg is not None and node.args.kwarg.arg not in rebound else None
        found = []
        forwards = False
        moves = False  # a `.to(...)` call: device_param_guards reads the function then
        held = function_locals(node, decided) if decided is not None else {}
        # nested definitions are walked on their own below (their code is theirs, not this
        # function's); the parameters this one never rebinds are theirs to read as closures
        stale = stored_before(node.body, names & rebound, stores)
        # `has_mixed_prefill = False`, set only under `if split_prefill_decode and ...:`
        flags = flag_tests(node, lambda test: compile_test(
            test, frozenset(n for n in names if not stale(n, test.lineno)), torch)) if names else {}
        code = [sub for sub in function_code(node) if type(sub) in _IF_OR_CALL or type(sub) in _BINDINGS]
        plain = plain_bound(sub for sub in code if type(sub) in _BINDINGS) & twice
        for sub in code:
            if type(sub) in _BINDINGS:
                continue
            if isinstance(sub, ast.If) and names:
                # a parameter stored into before the test may no longer be what was passed
                test = compile_test(sub.test, frozenset(n for n in names if not stale(n, sub.lineno)), torch, flags)
                if test is None:
                    continue
                for body, compiled in ((sub.body, test), (sub.orelse, ("not", test))):
                    if body:
                        end = getattr(body[-1], "end_lineno", None) or body[-1].lineno
                        found.append((body[0].lineno, end, compiled))
            elif isinstance(sub, ast.Call):
                moves = moves or (isinstance(sub.func, ast.Attribute) and sub.func.attr == "to") \
                    or any(k.arg == "device" for k in sub.keywords)
                passed, handed = {}, {}
                pairs = []
                for position, arg in enumerate(sub.args):
                    if isinstance(arg, ast.Starred):
                        break
                    pairs.append((position, arg))
                pairs.extend((k.arg, k.value) for k in sub.keywords if k.arg is not None)
                for keyword in sub.keywords:
                    if keyword.arg is None and isinstance(keyword.value, ast.Name) and keyword.value.id == own_kwargs:
                        handed["**"] = own_kwargs
                for at, arg in pairs:
                    value = _literal(arg)
                    if value is not UNKNOWN:
                        passed[at] = value
                    elif isinstance(arg, ast.Name) and arg.id in held:
                        passed[at] = held[arg.id][0]
                    elif isinstance(arg, ast.Name) and arg.id in kept:
                        handed[at] = arg.id
                    elif (kind := argument_kind(arg, torch, local_device)) is not None:
                        passed[at] = kind  # a tensor, or a field read (typeargs.py)
                    elif mixed_argument(arg, twice, plain):
                        passed[at] = MIXED  # a tensor on one path only: numberguards.TensorArgs
                if passed:
                    literals[(sub.lineno, sub.col_offset + 1)] = passed
                if handed:
                    passes[(sub.lineno, sub.col_offset + 1)] = handed
                    forwards = True
        if names:
            # a parameter rebound anywhere may not hold what the caller passed when tested
            found.extend(item for item in early_exits(node.body, lambda test: compile_test(test, names, torch, flags))
                         if test_params(item[2]) <= kept)
            # `torch.from_numpy(a).to(device)`, `torch.tensor([n], device=device)`: a copy to the
            # GPU only for a GPU `device`
            if moves:
                found.extend(device_param_guards(node, kept))
                # `device = torch.device("cuda" if not force_cpu else "cpu")`: a GPU under the test
                found.extend(chosen_device_guards(node, kept, compile_test))
        closures = False
        for block in statement_blocks(node.body):
            if names:
                # `vals.append(row if no_copy_to_cpu else row.tolist())`: an arm is a block too
                found.extend(ifexp_blocks(block, lambda test: compile_test(
                    test, frozenset(n for n in names if not stale(n, test.lineno)), torch, flags)))
            for stmt in block:
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    closures = function(stmt, f"{local}.{stmt.name}", kept) or closures
        # recorded also when only a nested function's guards read this one's parameters: its
        # call into that function then puts them on its own parameters (ConstArgs.derive)
        if found or forwards or closures:
            qualname = f"{module}.{local}" if module else local
            guards[qualname] = (params, found)
            return any(default == CLOSURE for _, default in params.values())
        return False

    def walk(body, prefix: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                walk(stmt.body, f"{prefix}{stmt.name}.")
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                function(stmt, f"{prefix}{stmt.name}")  # functions nested in it: not followed
            elif isinstance(stmt, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    walk(getattr(stmt, field, []), prefix)

    walk(tree.body, "")
    return guards, literals, passes


class ConstArgs:
    """The whole-program view: which guards a line of a function lies under, and whether a
    call's literals make one of them false."""

    def __init__(self, results: dict) -> None:
        self.guards: dict[str, tuple] = {}
        self.literals: dict[str, dict] = {}  # path -> {(line, column): {position/keyword: value}}
        self.starred: dict[str, set] = {}  # path -> {(line, column)} of calls with *args/**kwargs
        self.passes: dict[str, dict] = {}  # path -> {(line, column): {position/keyword: parameter}}
        self.derived: dict[str, list] = {}  # function -> [(line, line, test)] (`derive`)
        self.none_config = None  # confignone.NoneConfig, set by the whole-program pass
        self._results, self._names = results, None  # attribute names only given device tensors (typeargs.py)
        for path, result in results.items():
            self.guards.update(getattr(result, "const_guards", None) or {})
            if getattr(result, "const_literals", None):
                self.literals[path] = result.const_literals
            if getattr(result, "const_passes", None):
                self.passes[path] = result.const_passes
            passes = getattr(result, "flag_passes", None) or {}
            self.starred[path] = {at for at, (star, _, forwards) in passes.items() if star or forwards}

    def under(self, qualname: str, line: int) -> tuple:
        """Indices of the guards of `qualname` whose block holds `line` (empty: none)."""
        entry = self.guards.get(qualname)
        if entry is None:
            return ()
        return tuple(i for i, (start, end, _) in enumerate(entry[1]) if start <= line <= end)

    def item(self, qualname: str, index: int) -> tuple:
        """(start, end, test) of a guard: an `if` block of the function, or past those, a call
        that syncs only under its callee's guard on a parameter it passes on (`derive`)."""
        items = self.guards[qualname][1]
        if index < len(items):
            return items[index]
        return self.derived[qualname][index - len(items)]

    def derive(self, caller: str, path: str, call, target: str, shift: int, key: tuple) -> tuple:
        """The guard a call puts on its callee's guarded sync (`key`) in the caller's terms:
        `top_raw(..., no_copy_to_cpu=no_copy_to_cpu)` syncs only when the caller's own
        `no_copy_to_cpu` is false. (index,) of that guard of `caller` (a block of the call's line
        only, kept apart from its `if` blocks), or () when the call's arguments leave no test on
        the caller's parameters (the sync is the call's, unconditionally)."""
        if caller not in self.guards:
            return ()
        tests = [self.item(target, index)[2] for index in key]
        test = tests[0] if len(tests) == 1 else ("and", tuple(tests))
        test = substitute(test, self.env(path, call, target, shift, passed_on=True, wanted=test_params(test),
                                         caller=caller))
        if not test_params(test):
            return ()
        own = self.derived.setdefault(caller, [])
        block = (call.line, call.line, test)
        if block not in own:
            own.append(block)
        return (len(self.guards[caller][1]) + own.index(block),)

    def ruled_out(self, path: str, call, target: str, shift: int, key: tuple) -> str | None:
        """Why the call cannot take the guarded branch `key` (indices into the target's guards)
        of `target`, or None when it may."""
        entry = self.guards.get(target)
        if entry is None or not key:
            return None
        env = self.env(path, call, target, shift)
        for index in key:
            start, end, test = self.item(target, index)
            if evaluate(test, env) is False:
                short = target.rsplit(".", 1)[-1]
                if _reads_type(test) or any(isinstance(env.get(name), tuple) for name in test_params(test)):
                    return f"the arguments' types rule out the branch of `{short}` that syncs (line {start})"
                return f"constant arguments rule out the branch of `{short}` that syncs (line {start})"
            # `p is None and C` with an argument None only where C is false (confignone.py)
            why = self.none_config and self.none_config.ruled_out(path, call, target, shift, start, end, entry[0],
                                                                           test_params(test))
            if why:
                return why
        return None

    def env(self, path: str, call, target: str, shift: int, passed_on: bool = False, wanted=(),
            caller: str | None = None) -> dict:
        """What the call fixes for each parameter of `target`: the literal it passes, the literal
        default of one it leaves out (not when `*args`/`**kwargs` may pass it unseen), with
        `passed_on` a `PassedOn` for one it hands on from its own parameters; else UNKNOWN.
        A call that hands on its own `**kwargs` passes a parameter it does not name as the
        key of that name in them: `PassedOn(("**", name, default))`; `wanted` names such keys
        of `target`'s own `**kwargs` that a test reads (`fmha_sm100(..., **kwargs)` ->
        `_fmha_sm100(..., check_input_valid: bool = False)`): absent, the innermost default.
        A nested function's closure over a parameter of `caller`, the function it is nested in,
        is that parameter passed on (with `passed_on`); from any other caller it is unknown."""
        params = self.guards[target][0]
        at_call = (call.line, call.column)
        literals = self.literals.get(path, {}).get(at_call, {})
        handed = self.passes.get(path, {}).get(at_call, {}) if passed_on else {}
        star = at_call in self.starred.get(path, ())
        env = {}
        for name, (position, default) in params.items():
            if default == CLOSURE:
                # the enclosing function's own parameter, as it was passed (it never rebinds it)
                enclosing = passed_on and caller is not None and target.rpartition(".")[0] == caller
                env[name] = PassedOn(name) if enclosing else UNKNOWN
                continue
            value = UNKNOWN
            named = False
            for arg_position, keyword, _ in call.args:
                if keyword == name or (position is not None and arg_position is not None and arg_position >= 0
                                       and arg_position + shift == position):
                    named = True
                    at = keyword if keyword == name else arg_position
                    value = literals.get(at, UNKNOWN)
                    if isinstance(value, tuple):  # a type marker: a field read is the tree's to tell
                        if self._names is None:
                            self._names = device_names(self._results)
                        value = resolve(value, self._names, UNKNOWN)
                    if value is UNKNOWN and at in handed:
                        value = PassedOn(handed[at])
                    break
            if not named and not star and default[0] == "v":
                value = default[1]
            elif not named and star and "**" in handed:
                value = PassedOn(("**", name, default))
            env[name] = value
        for name in wanted:
            if not isinstance(name, tuple):
                continue
            _, key, default = name
            value = UNKNOWN
            named = [keyword for _, keyword, _ in call.args if keyword == key]
            if named:
                value = literals.get(key, UNKNOWN)
                if value is UNKNOWN and key in handed:
                    value = PassedOn(handed[key])
            elif star:
                value = PassedOn(name) if "**" in handed else UNKNOWN
            elif default[0] == "v":
                value = default[1]
            env[name] = value
        return env


def _reads_type(test: tuple) -> bool:
    """Does a compiled test have a type part (typeargs.py)?"""
    if test[0] == "type":
        return True
    if test[0] == "not":
        return _reads_type(test[1])
    return test[0] in ("and", "or") and any(_reads_type(t) for t in test[1])


class _Places:
    """A file's attribute places, as typeargs.device_names reads a result's."""
    __slots__ = ("attr_places",)

    def __init__(self, places: dict) -> None:
        self.attr_places = places
