"""Flags a caller decides: lines that run only when a parameter that defaults to off is turned on.

`def _fmha(q, k, ..., check_input_valid: bool = False): ... if check_input_valid:
_validate(...)` validates only for a caller that asks. When no call in the tree can pass a true
value for the flag, the branch does not run in serving, like the None-guards every caller rules
out (callguards.guarded_lines). Read from each file's `ast` (`file_flags`), decided over the
whole tree after the call graph is resolved (`flag_lines`).

A call "may turn the flag on" when it passes it (by keyword or position) anything but a literal
`False` / `None`, or passes `*args` / a `**mapping` that may hold it. Two forms only forward
what the caller itself was given, and are followed up the call graph: the caller's own flag
parameter passed on (`check_input_valid=check_input_valid`), and the caller's own `**kwargs`
passed on (then it is on when a call into the caller passes it by keyword). A function with no
resolved call in the tree may be called from outside with the flag on: its branch stays.

Everything recorded is plain tuples and dicts: it is pickled into the lint cache.
"""

from __future__ import annotations

import ast

from .nodewalk import nodes_breadth_first

_FLAG_NODES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.If, ast.Call})

OFF, ON = "off", "on"  # what a call passes for a parameter: a literal False/None, or anything else
STAR = "*"  # the call passes `*args` or a `**mapping` not its own `**kwargs`: anything may be on


def _off_default(node) -> bool:
    return isinstance(node, ast.Constant) and (node.value is None or node.value is False)


def _flag_params(function) -> dict[str, int | None]:
    """Parameters that default to False or None: name -> position (None: keyword-only)."""
    args = function.args
    positional = args.posonlyargs + args.args
    found: dict[str, int | None] = {}
    for offset, default in enumerate(args.defaults):
        index = len(positional) - len(args.defaults) + offset
        if _off_default(default):
            found[positional[index].arg] = index
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        if default is not None and _off_default(default):
            found[arg.arg] = None
    return found


def _tested_flag(test, flags) -> str | None:
    """`if flag:` / `if flag and more:` on a parameter: its body runs only when it is on."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in parts:
        if isinstance(part, ast.Name) and part.id in flags:
            return part.id
    return None


def _passes(call: ast.Call, flags: dict, var_kw: str | None):
    """What a call passes that a flag guard needs: (star, {keyword or position: OFF / ON /
    ("fwd", caller's flag parameter)}, forwards the caller's own `**kwargs`), or None when it
    passes nothing but plain values (the call record already says what is passed)."""
    star, forwards_kwargs, items = False, False, {}

    def value(node):
        if _off_default(node):
            return OFF
        if isinstance(node, ast.Name) and node.id in flags:
            return ("fwd", node.id)
        return None

    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            star = True
            continue
        kind = value(arg)
        if kind is not None:
            items[position] = kind
    for keyword in call.keywords:
        if keyword.arg is None:
            if var_kw is not None and isinstance(keyword.value, ast.Name) and keyword.value.id == var_kw:
                forwards_kwargs = True
            else:
                star = True
            continue
        kind = value(keyword.value)
        if kind is not None:
            items[keyword.arg] = kind
    if not (star or forwards_kwargs or items):
        return None
    return star, items, forwards_kwargs


def file_flags(tree: ast.Module, module: str) -> tuple[dict, dict]:
    """({function: [(start, end, parameter, position)]} of flag guards, {(line, column): passes}
    of the calls that pass a literal off value, a flag parameter, `*args` or `**kwargs`)."""
    guards: dict[str, list] = {}
    passes: dict[tuple, tuple] = {}

    def walk(body, prefix: str, in_class: bool) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                walk(stmt.body, f"{prefix}{stmt.name}.", True)
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                function(stmt, f"{prefix}{stmt.name}")
            elif isinstance(stmt, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    walk(getattr(stmt, field, []), prefix, in_class)

    def function(node, local: str) -> None:
        qualname = f"{module}.{local}" if module else local
        flags = _flag_params(node)
        var_kw = node.args.kwarg.arg if node.args.kwarg else None
        for sub in nodes_breadth_first(node, _FLAG_NODES):
            if sub is not node and isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                function(sub, f"{local}.{sub.name}")  # its own parameters; walked again below, harmless
            elif isinstance(sub, ast.If) and flags:
                param = _tested_flag(sub.test, flags)
                if param is not None and sub.body:
                    end = getattr(sub.body[-1], "end_lineno", None) or sub.body[-1].lineno
                    guards.setdefault(qualname, []).append((sub.body[0].lineno, end, param, flags[param]))
            elif isinstance(sub, ast.Call):
                found = _passes(sub, flags, var_kw)
                if found is not None:
                    passes.setdefault((sub.lineno, sub.col_offset + 1), found)

    walk(tree.body, "", False)
    return guards, passes


def flag_lines(program, edges: dict, results: dict) -> dict[str, list]:
    """{path: [(start, end, why)]}: the flag guards no call in the tree can turn on."""
    guards: dict[str, list] = {}
    passes: dict[str, dict] = {}
    for path, result in results.items():
        for qualname, items in (getattr(result, "flag_guards", None) or {}).items():
            guards.setdefault(qualname, []).extend(items)
        if getattr(result, "flag_passes", None):
            passes[path] = result.flag_passes
    if not guards:
        return {}
    calls_into: dict[str, list] = {}  # function -> [(caller, call, shift)]
    for caller, out in edges.items():
        for call, target, shift in out:
            calls_into.setdefault(target, []).append((caller, call, shift))
    on: dict[tuple, bool] = {}  # (function, flag): may be on, once decided
    active: set[tuple] = set()  # being decided: a cycle of calls that only pass the flag round adds nothing
    leaned: list[bool] = [False]  # whether an answer leaned on one being decided (then it is not kept)

    def may_be_on(function: str, name: str, position: int | None, depth: int = 0) -> bool:
        key = (function, name)
        if key in on:
            return on[key]
        if key in active:
            leaned[0] = True
            return False
        active.add(key)
        outer, leaned[0] = leaned[0], False
        callers = calls_into.get(function, ())
        result = not callers or depth > 32
        for caller, call, shift in callers if not result else ():
            table = passes.get(program.path_of[caller], {})
            star, items, forwards_kwargs = table.get((call.line, call.column), (False, {}, False))
            index = None if position is None else position - shift
            passed = next((a for a in call.args if a[1] == name or (index is not None and a[0] == index)), None)
            if passed is not None:
                kind = items.get(name, items.get(passed[0]) if passed[0] is not None else None)
                if kind == OFF:
                    continue
                if isinstance(kind, tuple):  # the caller's own flag, passed on
                    caller_position = _position(program, caller, kind[1])
                    result = may_be_on(caller, kind[1], caller_position, depth + 1)
                else:
                    result = True
            elif star:
                result = True
            elif forwards_kwargs:  # `f(x, **kwargs)`: on when a call into the caller names it
                result = may_be_on(caller, name, None, depth + 1)
            if result:
                break
        active.discard(key)
        if result or not leaned[0]:
            on[key] = result
        leaned[0] = outer or (leaned[0] and not result)
        return result

    found: dict[str, list] = {}
    for qualname, items in guards.items():
        if qualname not in program.functions:
            continue
        for start, end, param, position in items:
            if not may_be_on(qualname, param, position):
                found.setdefault(program.path_of[qualname], []).append(
                    (start, end, f"runs only when `{param}` is on, and no call in the tree turns it on"))
    return found


def _position(program, function: str, name: str) -> int | None:
    params = program.functions[function]["params"]
    return params.index(name) if name in params else None
