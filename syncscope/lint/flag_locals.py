"""A local flag cleared first and set only under tests of the function's parameters: a test of
the flag needs one of those tests.

    def fmha_sm100_plan(qo_segment_lens, kv_segment_lens, *args, split_prefill_decode=True, **kw):
        has_mixed_prefill = False
        if split_prefill_decode and qmax > split_threshold:
            split = (qo_segment_lens > split_threshold).nonzero(...)[0, 0].item()
            has_mixed_prefill = split > 0
        if has_mixed_prefill:                   # only where `split_prefill_decode` was true
            decode = _fmha_sm100_plan(...)      # syncs

(vLLM's vendored SM100 attention planner; MiniMax-M3's decode plan cache, its one caller, passes
`split_prefill_decode=False`.) The fact, about code: a local whose first binding is `name =
False` (or None) among the function's own top-level statements, and whose every other binding
is a plain assignment under the body (or `else`) of an `if` whose test reads the function's
parameters (constargs.compile_test), is true only where one of those tests held: the flag is
compiled as that test "and something unknown", since it may still be false where the test
held (`split > 0`). Constant arguments can then rule its blocks out, never in. Any other
binding (a loop target, `+=`, `with ... as`, a walrus, an assignment under no such `if`, a
parameter of that name) leaves the flag unknown.
"""

from __future__ import annotations

import ast

from .nodewalk import function_code, every_node

_UNKNOWN = ("?",)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def flag_tests(function, compile_at) -> dict[str, tuple]:
    """{flag: compiled test} of the function's flags (see above). `compile_at(test)`: the test
    compiled over the parameters not rebound before its line, or None."""
    first = {}
    for stmt in function.body:
        if _cleared(stmt):
            first.setdefault(stmt.targets[0].id, stmt)
    if not first:
        return {}
    args = function.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a}
    candidates = set(first) - params
    plain: set[int] = set()  # ids of the Name nodes that are the whole target of a plain assignment
    for node in function_code(function):
        if type(node) is ast.Assign:
            plain.update(id(target) for target in node.targets if type(target) is ast.Name)
    for node in function_code(function):
        if type(node) is ast.Name and type(node.ctx) is not ast.Load and id(node) not in plain:
            candidates.discard(node.id)  # a loop target, `+=`, `with ... as`, `del`...
        elif type(node) in (ast.Global, ast.Nonlocal):
            candidates.difference_update(node.names)
        elif type(node) in (ast.FunctionDef, ast.AsyncFunctionDef):  # a closure may set it: `nonlocal`
            candidates.difference_update(name for inner in every_node(node) if type(inner) is ast.Nonlocal
                                         for name in inner.names)
    if not candidates:
        return {}
    sets: dict[str, list] = {name: [] for name in candidates}  # flag -> the tests of each setting
    _walk(function.body, (), first, sets, compile_at)
    found = {}
    for name, tests in sets.items():
        if not tests or None in tests:
            continue
        either = tests[0] if len(tests) == 1 else ("or", tuple(tests))
        found[name] = ("and", (either, _UNKNOWN))
    return found


def _cleared(stmt) -> bool:
    return type(stmt) is ast.Assign and len(stmt.targets) == 1 and type(stmt.targets[0]) is ast.Name \
        and type(stmt.value) is ast.Constant and (stmt.value.value is False or stmt.value.value is None)


def _walk(body: list, held: tuple, first: dict, sets: dict, compile_at) -> None:
    """Record, for each assignment of a flag below `body`, the tests that hold there (None: an
    assignment under no parameter test, or a second clearing: the flag is unknown)."""
    for stmt in body:
        if isinstance(stmt, _NESTED):
            continue
        if type(stmt) is ast.Assign:
            for target in stmt.targets:
                if type(target) is ast.Name and target.id in sets and first.get(target.id) is not stmt:
                    tests = [test for test in held if test is not None]
                    sets[target.id].append((tests[0] if len(tests) == 1 else ("and", tuple(tests))) if tests else None)
            continue
        if type(stmt) is ast.If:
            test = compile_at(stmt.test)
            _walk(stmt.body, held + (test,), first, sets, compile_at)
            _walk(stmt.orelse, held + ((("not", test) if test is not None else None),), first, sets, compile_at)
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                _walk(inner, held, first, sets, compile_at)
        for handler in getattr(stmt, "handlers", ()) or ():
            _walk(handler.body, held, first, sets, compile_at)
        if type(stmt) is ast.Match:
            for case in stmt.cases:
                _walk(case.body, held, first, sets, compile_at)
