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
A call passing a read of a switch off by default (`log_stats=config.log_balancedness`, a bool
field that defaults to False and that nothing in the tree sets: switch_args.py) passes it off.

Everything recorded is plain tuples and dicts: it is pickled into the lint cache.
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

from .dispatched import dispatched_calls
from .nodewalk import nodes_breadth_first, every_node
from .text_scans import TextScans
from .switch_args import SwitchArgs

_FLAG_NODES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.If, ast.Call})
# with the names, for a function whose None-default parameters lose what it stores into them;
# `type X = ...` (3.12) keeps its name where the walk does not look (`nodewalk.code_fields`)
_TYPE_ALIAS = getattr(ast, "TypeAlias", None)
_FLAG_AND_NAME_NODES = _FLAG_NODES | {ast.Name} | ({_TYPE_ALIAS} if _TYPE_ALIAS else set())

OFF, ON = "off", "on"  # what a call passes for a parameter: a literal False, or anything else
NONE = "none"  # a literal None: off for `if flag:` and for `if flag is not None:`
# what a call's stars may pass: `*args`, positional parameters only; a `**mapping` not its own
# `**kwargs`, any parameter (recorded as `star` in a call's passes: False, ARGS or MAPPING)
ARGS, MAPPING = "*", "**"


def _off_default(node) -> bool:
    return isinstance(node, ast.Constant) and (node.value is None or node.value is False)


def _none(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _flag_params(function) -> tuple[dict[str, int | None], set[str]]:
    """Parameters that default to False or None: name -> position (None: keyword-only); and
    those of them that default to None."""
    args = function.args
    positional = args.posonlyargs + args.args
    found: dict[str, int | None] = {}
    nones: set[str] = set()
    for offset, default in enumerate(args.defaults):
        index = len(positional) - len(args.defaults) + offset
        if _off_default(default):
            found[positional[index].arg] = index
            if _none(default):
                nones.add(positional[index].arg)
    for arg, default in zip(args.kwonlyargs, args.kw_defaults):
        if default is not None and _off_default(default):
            found[arg.arg] = None
            if _none(default):
                nones.add(arg.arg)
    return found, nones


def _tested_flag(test, flags, nones) -> tuple[str, bool] | None:
    """`if flag:` / `if flag and more:` on a parameter: its body runs only when it is on; and
    `if flag is not None:` on one that defaults to None: only when a call passes it a value
    (the second member says which: a False passed turns that test on). `nones` leaves out the
    parameters the function stores into: the test is then on what it stored."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in parts:
        if isinstance(part, ast.Name) and part.id in flags:
            return part.id, False
        if isinstance(part, ast.Compare) and isinstance(part.left, ast.Name) and part.left.id in nones \
                and len(part.ops) == 1 and isinstance(part.ops[0], ast.IsNot) and _none(part.comparators[0]):
            return part.left.id, True
    return None


def _passes(call: ast.Call, flags: dict, nones: set, var_kw: str | None):
    """What a call passes that a flag guard needs: (star: False, ARGS or MAPPING, {keyword or
    position: OFF / ON / ("fwd", caller's flag parameter)}, forwards the caller's own `**kwargs`), or None when it
    passes nothing but plain values (the call record already says what is passed)."""
    star, forwards_kwargs, items = False, False, {}

    def value(node):
        if _off_default(node):
            return NONE if _none(node) else OFF
        if isinstance(node, ast.Name) and node.id in flags:
            return ("fwd", node.id, node.id in nones)
        return None

    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            star = star or ARGS
            continue
        kind = value(arg)
        if kind is not None:
            items[position] = kind
    for keyword in call.keywords:
        if keyword.arg is None:
            if var_kw is not None and isinstance(keyword.value, ast.Name) and keyword.value.id == var_kw:
                forwards_kwargs = True
            else:
                star = MAPPING
            continue
        kind = value(keyword.value)
        if kind is not None:
            items[keyword.arg] = kind
    if not (star or forwards_kwargs or items):
        return None
    return star, items, forwards_kwargs


def file_flags(tree: ast.Module, module: str) -> tuple[dict, dict]:
    """({function: [(start, end, parameter, position, whether the test is `is not None`)]} of
    flag guards, {(line, column): passes} of the calls that pass a literal off value, a flag
    parameter, `*args` or `**kwargs`)."""
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
        flags, nones = _flag_params(node)
        nodes = nodes_breadth_first(node, _FLAG_AND_NAME_NODES if nones else _FLAG_NODES)  # one walk
        if nones:  # `if out is None: out = torch.empty_like(x)` before `if out is not None:`
            nones -= {n.id for n in nodes if type(n) is ast.Name and type(n.ctx) is ast.Store}
            nones -= {n.name.id for n in nodes if type(n) is _TYPE_ALIAS and type(n.name) is ast.Name}
        var_kw = node.args.kwarg.arg if node.args.kwarg else None
        kept = False  # the function was read once: it puts nothing into its `**kwargs`
        for sub in nodes:
            if type(sub) is ast.Name:
                continue
            if sub is not node and isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
                function(sub, f"{local}.{sub.name}")  # its own parameters; walked again below, harmless
            elif isinstance(sub, ast.If) and flags:
                tested = _tested_flag(sub.test, flags, nones)
                if tested is not None and sub.body:
                    end = getattr(sub.body[-1], "end_lineno", None) or sub.body[-1].lineno
                    param, given = tested
                    guards.setdefault(qualname, []).append((sub.body[0].lineno, end, param, flags[param], given))
            elif isinstance(sub, ast.Call):
                found = _passes(sub, flags, nones, var_kw)
                if found is not None and found[2] and not kept:
                    kept = not _stores_into(node, var_kw)
                    if not kept:  # `kwargs["x"] = ...`: what it hands on is not only what it was given
                        var_kw = None
                        found = _passes(sub, flags, nones, var_kw)
                if found is not None:
                    passes.setdefault((sub.lineno, sub.col_offset + 1), found)

    walk(tree.body, "", False)
    return guards, passes


def flag_lines(program, edges: dict, results: dict, binds, texts: TextScans, switches=None) -> dict[str, list]:
    """{path: [(start, end, why)]}: the flag guards no call in the tree can turn on (`binds`:
    callguards.binds, for the calls by name; `texts`: the files' texts, for `_keyword_passed`;
    `switches`: optin.off_switches, for the calls that pass a switch off by default: switch_args.py)."""
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
    _dispatched_callers(program, edges, results, guards, calls_into, binds)
    args = SwitchArgs(switches[0], switches[1], results) if switches and switches[0] else None
    via: dict[tuple, frozenset] = {}  # (function, flag, given) decided off: the off switches some call passes it
    on: dict[tuple, bool] = {}  # (function, flag, given): may be on, once decided
    active: set[tuple] = set()  # being decided: a cycle of calls that only pass the flag round adds nothing
    leaned: list[bool] = [False]  # whether an answer leaned on one being decided (then it is not kept)

    def may_be_on(function: str, name: str, position: int | None, given: bool, depth: int = 0) -> bool:
        """Whether a call may pass `name` a true value (`given`: any value but None)."""
        key = (function, name, given)
        if key in on:
            return on[key]
        if key in active:
            leaned[0] = True
            return False
        active.add(key)
        outer, leaned[0] = leaned[0], False
        callers = calls_into.get(function, ())
        result = not callers or depth > 32
        passed_switches: set = set()
        for caller, call, shift in callers if not result else ():
            table = passes.get(program.path_of[caller], {})
            index = None if position is None else position - shift
            if isinstance(call, ByName):
                star, forwards_kwargs = call.opened, False
                passed = _by_name_passed(call, table, name, index)
            else:
                star, items, forwards_kwargs = table.get((call.line, call.column), (False, {}, False))
                passed = next((a for a in call.args if a[1] == name or (index is not None and a[0] == index)), None)
                if passed is not None:  # a value no literal record tells: anything
                    passed = items.get(name, items.get(passed[0], ON) if passed[0] is not None else ON)
            if passed is not None:
                kind = passed
                if kind == NONE or (kind == OFF and not given):
                    continue
                if kind == ON and not given and args is not None:  # a read of a switch off by default
                    switch = args.switch(program.path_of[caller], caller, call.line,
                                         None if isinstance(call, ByName) else call.column, name, index)
                    if switch is not None:
                        passed_switches.add(switch)
                        continue
                if isinstance(kind, tuple) and (kind[2] or not given):  # the caller's own flag, passed on
                    caller_position = _position(program, caller, kind[1])
                    result = may_be_on(caller, kind[1], caller_position, given, depth + 1)
                    passed_switches.update(via.get((caller, kind[1], given), ()))
                else:
                    result = True
            elif star and (star != ARGS or index is not None):  # `*args` passes no keyword-only flag
                result = True
            elif forwards_kwargs:  # `f(x, **kwargs)`: on when a call into the caller names it
                result = may_be_on(caller, name, None, given, depth + 1)
                passed_switches.update(via.get((caller, name, given), ()))
            if result:
                break
        active.discard(key)
        if not result and passed_switches:
            via[key] = frozenset(passed_switches)
        if result or not leaned[0]:
            on[key] = result
        leaned[0] = outer or (leaned[0] and not result)
        return result

    found: dict[str, list] = {}
    nones: list[tuple] = []  # `is not None` guards no recorded call passes: checked in the text
    for qualname, items in guards.items():
        if qualname not in program.functions:
            continue
        for start, end, param, position, given in items:
            if not may_be_on(qualname, param, position, given):
                if given:
                    nones.append((program.path_of[qualname], start, end, param))
                    continue
                off = via.get((qualname, param, given))
                why = f"runs only when `{param}` is on, and no call in the tree turns it on" if not off else \
                    f"runs only when `{param}` is on, and every call in the tree passes it off or a switch off by " \
                    f"default (`{'`, `'.join(sorted(off))}`: a bool field that defaults to False and that nothing in the tree sets)"
                found.setdefault(program.path_of[qualname], []).append((start, end, why))
    passed = _keyword_passed({param for *_, param in nones}, results, texts) if nones else set()
    for path, start, end, param in nones:
        if param not in passed:
            found.setdefault(path, []).append(
                (start, end, f"runs only when `{param}` is not None, and every call in the tree passes None or leaves it out"))
    return found


def _keyword_passed(params: set, results: dict, texts: TextScans) -> set:
    """The names among `params` that some file passes by keyword a value other than None
    (`f(x, output_tensor_list=parts)`), whatever the call: a call on a receiver the per-file
    records do not keep (`get_parallel().attn_tp_group.all_gather(...)`) is still a caller.
    A text scan (`(` or `,`, the name, `=`), so a tuple target of that name counts too; a file
    that cannot be read may pass all of them."""
    wanted = tuple(sorted(params))
    pattern = re.compile(r"[(,]\s*(" + "|".join(map(re.escape, wanted)) + r")\s*=(?!=)\s*(?!None\b)")
    found = texts.answers("keywords-passed", wanted, results, lambda text: frozenset(pattern.findall(text)))
    if found is None:
        return set(params)
    return set().union(*found.values())


def _position(program, function: str, name: str) -> int | None:
    params = program.functions[function]["params"]
    return params.index(name) if name in params else None


def _dispatched_callers(program, edges: dict, results: dict, guards: dict, calls_into: dict, binds) -> None:
    """Add the calls by name (a method called on a receiver of unknown class, which the per-step
    walk follows to every method of that name it can bind to: dispatched.py) to a
    guarded method's callers, as callguards.guarded_lines counts them: vLLM's sampler calls
    `holder.update_state(..., repeat_indices=None)` on a field of a metadata object."""
    for caller, line, shape, target in dispatched_calls(program, edges, results, guards, binds):
        if caller not in program.functions or caller not in program.path_of:
            continue
        positional, keywords, opened = shape if len(shape) == 3 else (*shape, True)
        params = program.functions[target]["params"]
        shift = 1 if params and params[0] == "self" else 0
        calls_into.setdefault(target, []).append((caller, ByName(line, positional, frozenset(keywords), opened), shift))


class ByName(NamedTuple):
    """A call by name, as the per-file dispatch records it: its line and shape, no column."""

    line: int
    positional: int
    keywords: frozenset
    opened: bool  # `*args` / `**kwargs`: it may pass anything


def _by_name_passed(call: ByName, table: dict, name: str, index: int | None):
    """What a call by name passes for `name`: None when it leaves it out; ON when it passes it
    by place, or by keyword a value no literal record on its line tells (the call's column is not
    recorded: only one call on the line passing that keyword is read)."""
    if name not in call.keywords:
        return ON if index is not None and 0 <= index < call.positional else None
    found = [items[name] for (line, _), (_, items, _) in table.items() if line == call.line and name in items]
    return found[0] if len(found) == 1 else ON


def starred_calls(result):
    """(function, line, column, whether it only hands on the function's own `**kwargs`) of a
    file's calls with `*args` / `**kwargs` (recorded here), by the function the call is in."""
    passes = getattr(result, "flag_passes", None) or {}
    starred = {at: not star for at, (star, _, forwards_kwargs) in passes.items() if star or forwards_kwargs}
    if not starred:
        return
    for qualname, facts in result.functions.items():
        for call in facts["calls"]:
            only_own = starred.get((call.line, call.column))
            if only_own is not None:
                yield qualname, call.line, call.column, only_own


_ADDERS = frozenset(("update", "setdefault", "__setitem__", "__ior__"))


def _stores_into(function, name: str) -> bool:
    """The function puts something into its `**name` or binds the name again: `kwargs["x"] =
    v`, `kwargs.update(...)`, `kwargs = {...}` (removing a key, `kwargs.pop("x")`, is not)."""
    for node in every_node(function):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _ADDERS:
            node = node.func.value
        elif isinstance(node, ast.AugAssign):
            node = node.target
        elif not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)):
            continue
        if isinstance(node, ast.Name) and node.id == name:
            return True
    return False
