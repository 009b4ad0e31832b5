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

Everything recorded is plain tuples and dicts: it is pickled into the lint cache.
"""

from __future__ import annotations

import ast
import operator

from .nodewalk import own_nodes

UNKNOWN = object()  # a value the call does not fix (never pickled: only used while evaluating)
NO_DEFAULT = ("nodefault",)
_IF_OR_CALL = frozenset({ast.If, ast.Call})
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


def compile_test(node, params) -> tuple | None:
    """The test as a tuple tree over `params`, or None when no part of it reads one."""
    if isinstance(node, ast.BoolOp):
        parts = [compile_test(v, params) or ("?",) for v in node.values]
        if all(p == ("?",) for p in parts):
            return None
        return ("and" if isinstance(node.op, ast.And) else "or", tuple(parts))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = compile_test(node.operand, params)
        return None if inner is None else ("not", inner)
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


def evaluate(test: tuple, env: dict):
    """True / False / None (unknown) of a compiled test for parameter values `env`."""
    kind = test[0]
    if kind == "?":
        return None
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
    if value is UNKNOWN:
        return None
    if kind == "truth":
        return bool(value)
    if kind == "none":
        return (value is None) == test[2]
    try:
        return bool(_APPLY[test[2]](value, test[3]))
    except TypeError:  # `"auto" < 1`: a comparison Python refuses; not ours to decide
        return None


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


def file_const_guards(tree: ast.Module, module: str | None) -> tuple[dict, dict]:
    """({function: (parameters, [(start, end, test)])} of the `if` blocks tested on parameters,
    {(line, column): {position or keyword: literal}} of the calls passing literals)."""
    guards: dict[str, tuple] = {}
    literals: dict[tuple, dict] = {}

    def function(node, local: str) -> None:
        params = _params(node)
        names = frozenset(params) - {"self", "cls"}
        found = []
        for sub in own_nodes(node.body, _IF_OR_CALL):
            if isinstance(sub, ast.If) and names:
                test = compile_test(sub.test, names)
                if test is None:
                    continue
                for body, compiled in ((sub.body, test), (sub.orelse, ("not", test))):
                    if body:
                        end = getattr(body[-1], "end_lineno", None) or body[-1].lineno
                        found.append((body[0].lineno, end, compiled))
            elif isinstance(sub, ast.Call):
                passed = {}
                for position, arg in enumerate(sub.args):
                    if isinstance(arg, ast.Starred):
                        break
                    value = _literal(arg)
                    if value is not UNKNOWN:
                        passed[position] = value
                for keyword in sub.keywords:
                    if keyword.arg is not None:
                        value = _literal(keyword.value)
                        if value is not UNKNOWN:
                            passed[keyword.arg] = value
                if passed:
                    literals[(sub.lineno, sub.col_offset + 1)] = passed
        if found:
            qualname = f"{module}.{local}" if module else local
            guards[qualname] = (params, found)

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
    return guards, literals


class ConstArgs:
    """The whole-program view: which guards a line of a function lies under, and whether a
    call's literals make one of them false."""

    def __init__(self, results: dict) -> None:
        self.guards: dict[str, tuple] = {}
        self.literals: dict[str, dict] = {}  # path -> {(line, column): {position/keyword: value}}
        self.starred: dict[str, set] = {}  # path -> {(line, column)} of calls with *args/**kwargs
        for path, result in results.items():
            self.guards.update(getattr(result, "const_guards", None) or {})
            if getattr(result, "const_literals", None):
                self.literals[path] = result.const_literals
            passes = getattr(result, "flag_passes", None) or {}
            self.starred[path] = {at for at, (star, _, forwards) in passes.items() if star or forwards}

    def under(self, qualname: str, line: int) -> tuple:
        """Indices of the guards of `qualname` whose block holds `line` (empty: none)."""
        entry = self.guards.get(qualname)
        if entry is None:
            return ()
        return tuple(i for i, (start, end, _) in enumerate(entry[1]) if start <= line <= end)

    def ruled_out(self, path: str, call, target: str, shift: int, key: tuple) -> str | None:
        """Why the call cannot take the guarded branch `key` (indices into the target's guards)
        of `target`, or None when it may."""
        entry = self.guards.get(target)
        if entry is None or not key:
            return None
        params, items = entry
        literals = self.literals.get(path, {}).get((call.line, call.column), {})
        star = (call.line, call.column) in self.starred.get(path, ())
        env = {}
        for name, (position, default) in params.items():
            value = UNKNOWN
            named = False
            for arg_position, keyword, _ in call.args:
                if keyword == name or (position is not None and arg_position is not None and arg_position >= 0
                                       and arg_position + shift == position):
                    named = True
                    at = keyword if keyword == name else arg_position
                    value = literals.get(at, UNKNOWN)
                    break
            if not named and not star and default[0] == "v":
                value = default[1]
            env[name] = value
        for index in key:
            start, end, test = items[index]
            if evaluate(test, env) is False:
                short = target.rsplit(".", 1)[-1]
                return f"constant arguments rule out the branch of `{short}` that syncs (line {start})"
        return None
