"""None-guards written as a conditional expression: `cpu if cpu is not None else t.cpu()`.

branches.py records `if p is None:` blocks on a parameter that defaults to None, and
callguards.guarded_lines makes them cold when every call in the tree passes the parameter.
The same fallback is often one expression. SGLang's speculative `filter_batch`:

    host_indices = (
        new_indices_cpu if new_indices_cpu is not None else new_indices.cpu()
    )

and its only caller passes `new_indices_cpu=keep_indices`. Lines are the unit of coldness, so
the fallback's lines are a guard only where nothing else on them can sync: the statement is an
assignment to plain names or a `return` whose whole value is the expression, the other arm is
a name, a constant or an attribute of a name (no call, no indexing), and no other statement
shares the fallback's lines.

The same arms, on any test constargs.py compiles on parameters (`ifexp_blocks`), are guard
blocks a call's arguments decide: SGLang's `get_token_ids_logprobs_raw` collects
`vals.append(row if no_copy_to_cpu else row.tolist())`, and its per-step callers pass
`no_copy_to_cpu=True` (the `.tolist()` never runs for them). There the statement may also be a
list's `append`/`extend` of the expression, and the test must hold no call of its own.

And the shortest form, `cache = plan_cache or PlanCache()` (`or_guard`): the object is built only
when the caller gives none. `or` takes the fallback for any false value, not only None, so the
parameter must be declared an optional object of a class (`plan_cache: PlanCache | None = None`),
not a container, a number, a string or a tensor (an empty list is false too); an object of a
class is true unless the class says otherwise. vLLM's MiniMax-M3 `prepare_decode_metadata` and
its one caller, which passes the builder's `plan_cache`.
"""

from __future__ import annotations

import ast

from .ast_annotations import dotted, union_members
from .nodewalk import every_node


def _plain(node) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, (ast.Name, ast.Constant))


_VALUED = (ast.Assign, ast.AnnAssign, ast.Return)
_COLLECT = frozenset({"append", "extend"})  # list methods: `vals.append(row if keep else row.tolist())`


def _has_call(node) -> bool:
    return any(isinstance(sub, (ast.Call, ast.Subscript)) for sub in every_node(node))


def guarded_ifexp(stmt, before: int, after: int, collect: bool = False):
    """(the conditional expression, its arm that may sync, whether that arm is the `body`) of a
    statement whose only code besides a plain arm is that expression, or None. The statement is an
    assignment to plain names, a `return`, or with `collect` a list's `append`/`extend` of it (a
    call that cannot sync); the other arm is a name, a constant or an attribute of a name; no
    other statement shares the arm's lines (`before` / `after`: the last line of the statement
    before it and the first of the one after it in the block, 0 / a large number when none)."""
    if isinstance(stmt, ast.Assign):
        if not all(isinstance(t, ast.Name) for t in stmt.targets):
            return None
        value = stmt.value
    elif isinstance(stmt, ast.AnnAssign):
        if not isinstance(stmt.target, ast.Name):
            return None
        value = stmt.value
    elif isinstance(stmt, ast.Return):
        value = stmt.value
    elif collect and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        func = call.func
        if not (isinstance(func, ast.Attribute) and func.attr in _COLLECT and isinstance(func.value, ast.Name)
                and len(call.args) == 1 and not call.keywords):
            return None
        value = call.args[0]
    else:
        return None
    if not isinstance(value, ast.IfExp):
        return None
    if _plain(value.orelse):
        arm, is_body = value.body, True
    elif _plain(value.body):
        arm, is_body = value.orelse, False
    else:
        return None
    start, end = arm.lineno, getattr(arm, "end_lineno", None) or arm.lineno
    if start <= before or end >= after:
        return None
    return value, arm, is_body


def ifexp_guard(stmt, params, nullable, before: int, after: int) -> tuple[int, int, str] | None:
    """(first line, last line, parameter) of the arm of `stmt`'s conditional expression that
    runs only when a parameter is None, or None. `before` / `after`: as for `guarded_ifexp`."""
    found = guarded_ifexp(stmt, before, after)
    if found is None:
        return None
    value, arm, is_body = found
    test = value.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.left, ast.Name)
            and isinstance(test.ops[0], (ast.Is, ast.IsNot)) and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None):
        return None
    param = test.left.id
    if param not in params or param in ("self", "cls") or param in nullable:
        return None
    if is_body != isinstance(test.ops[0], ast.Is):  # the arm that may sync runs when it is not None
        return None
    return arm.lineno, getattr(arm, "end_lineno", None) or arm.lineno, param


def ifexp_blocks(body: list, compile_test) -> list[tuple[int, int, tuple]]:
    """[(first line, last line, test)] of the arms of conditional expressions in the statements of
    `body` (a block) that may sync only when a test on parameters holds (constargs.py, stepargs.py:
    `vals.append(row if no_copy_to_cpu else row.tolist())` with a caller passing
    `no_copy_to_cpu=True`). The test must hold no call or subscript of its own: it shares the
    arm's line, and lines are the unit of coldness."""
    found = []
    for index, stmt in enumerate(body):
        kind = type(stmt)
        if kind is ast.Expr:  # most statements: calls; only `x.append(a if t else b)` is wanted
            call = stmt.value
            if type(call) is not ast.Call or len(call.args) != 1 or type(call.args[0]) is not ast.IfExp:
                continue
        elif kind not in _VALUED or type(stmt.value) is not ast.IfExp:
            continue
        before = body[index - 1].end_lineno if index else 0
        after = body[index + 1].lineno if index + 1 < len(body) else 1 << 30
        shaped = guarded_ifexp(stmt, before, after, collect=True)
        if shaped is None:
            continue
        value, arm, is_body = shaped
        if _has_call(value.test):
            continue
        test = compile_test(value.test)
        if test is None:
            continue
        found.append((arm.lineno, getattr(arm, "end_lineno", None) or arm.lineno, test if is_body else ("not", test)))
    return found


# declared types whose objects may be false while not None: `p or fallback` takes the fallback then
_MAYBE_FALSE = frozenset({"Tensor", "List", "Dict", "Tuple", "Set", "FrozenSet", "Sequence", "Mapping",
                          "MutableMapping", "MutableSequence", "Iterable", "Collection", "Any", "Deque",
                          "OrderedDict", "DefaultDict", "Counter", "ndarray", "Size"})


def or_fallback(stmt, function: ast.FunctionDef | ast.AsyncFunctionDef, nullable) -> tuple[str, ast.expr] | None:
    """(parameter, fallback) of `x = p or fallback` / `return p or fallback`, where `p` is a
    parameter of `function` declared an optional object of a class (module docstring) that a
    caller may pass, and `fallback` holds a call; else None."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
    if not isinstance(stmt, _VALUED) or not all(isinstance(t, ast.Name) for t in targets):
        return None
    value = stmt.value
    if not (isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and len(value.values) == 2
            and isinstance(value.values[0], ast.Name) and _has_call(value.values[1])):
        return None
    param = value.values[0].id
    if param in ("self", "cls") or param in nullable:
        return None
    args = function.args
    declared = next((a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs if a.arg == param), None)
    if declared is None or not _admits_none(declared) or not _object_of_a_class(declared):
        return None
    return param, value.values[1]


def _object_of_a_class(annotation: ast.AST) -> bool:
    """`PlanCache | None`, `Optional["PlanCache"]`, `mod.PlanCache | None`: one capitalized class
    besides None, not one whose objects may be false (`_MAYBE_FALSE`; a generic by its own name,
    `List[int]` as `List`)."""
    members = union_members(annotation)
    while members is not None and len(members) == 1 and isinstance(members[0], ast.Subscript) \
            and (dotted(members[0].value) or "").rsplit(".", 1)[-1] == "Optional":
        members = union_members(members[0].slice)
    if not members or len(members) != 1:
        return False
    member = members[0].value if isinstance(members[0], ast.Subscript) else members[0]
    name = (dotted(member) or "").rsplit(".", 1)[-1]
    return name[:1].isupper() and name not in _MAYBE_FALSE


def or_guard(stmt, function, nullable, before: int, after: int) -> tuple[int, int, str] | None:
    """(first line, last line, parameter) of `or_fallback`'s fallback, when no other statement
    shares its lines (`before` / `after`: as for `guarded_ifexp`)."""
    found = or_fallback(stmt, function, nullable)
    if found is None:
        return None
    param, fallback = found
    start, end = fallback.lineno, getattr(fallback, "end_lineno", None) or fallback.lineno
    if start <= before or end >= after:
        return None
    return start, end, param


def nullable_required(args: ast.arguments) -> frozenset:
    """Parameters without a default whose annotation admits None (`Optional[SpecInput]`,
    `SpecInput | None`, `Union[X, None]`): SGLang's `_apply_cuda_graph_metadata(..., spec_info:
    Optional[SpecInput], ...)` is given `spec_info=forward_batch.spec_info`, None on a plain
    decode step, by each of its callers. A parameter that is None only by its default
    (`chunk_indices: Optional[Tensor] = None`) keeps its guard: a caller that passes it passes
    a value."""
    positional = args.posonlyargs + args.args
    required = positional[:len(positional) - len(args.defaults)]
    required += [a for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
    return frozenset(a.arg for a in required if a.annotation is not None and _admits_none(a.annotation))


def _admits_none(node: ast.AST) -> bool:
    text = ast.unparse(node).replace(" ", "")
    return text.startswith(("Optional[", "typing.Optional[")) or "|None" in text or "None|" in text \
        or (text.startswith(("Union[", "typing.Union[")) and ",None" in text)
