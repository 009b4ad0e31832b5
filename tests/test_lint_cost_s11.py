"""Cost work of session 11 (docs/lint.md, "cold cost, third pass"): one walk of a function's own
code serves constargs.py, confignone.py and held_tests.py, and the interner handles names and
numbers without a call each. Each must find exactly what the code it replaced found."""

from __future__ import annotations

import ast
import copy
import textwrap
from collections import Counter

from syncscope.lint import constargs, held_tests
from syncscope.lint.interning import Interner
from syncscope.lint.nodewalk import CODE_KINDS, SCOPES, function_code, own_nodes

SOURCE = textwrap.dedent("""
    def outer(self, x, flag=False):
        global counter
        check = flag and x > 1
        ready = helper(x)
        ready = not ready
        tag: str = "t"
        if check:
            y = Encoder(x)(lambda z: Inner(z))
        while ready:
            (a, b), c = pair(x)
            del c
            assert b, "b"
        for i in range(3):
            out = i if check else None
        def nested(v=Default()):
            hidden = Hidden(v)
            if hidden:
                return hidden
        class Local:
            made = Built()
        value = [g(z) for z in x if z] or torch.zeros(len(x), device=d)
        return call(check, flag=ready, tag=tag, value=value)
""")


def _function():
    return ast.parse(SOURCE).body[0]


def test_one_walk_finds_what_each_reader_walked_for_and_the_nested_scopes_unentered():
    function = _function()
    nodes = function_code(function)
    assert function_code(function) is nodes  # walked once per function
    # the readers' own walks (enter_block_definitions=False), kept by type: the same nodes in the same order
    for wanted in ({ast.If, ast.Call}, {ast.If, ast.Return, ast.Assign, ast.Call}):
        assert [n for n in nodes if type(n) in wanted] == own_nodes(function.body, wanted, enter_block_definitions=False)
    # nested definitions and the lambda are found, their insides are not
    assert sorted(type(n).__name__ for n in nodes if type(n) in SCOPES) == ["ClassDef", "FunctionDef", "Lambda"]
    calls = {ast.unparse(n.func) for n in nodes if type(n) is ast.Call}
    assert "Encoder" in calls and "g" in calls and "Inner" not in calls and "Hidden" not in calls and "Default" not in calls
    assert all(type(n) in CODE_KINDS for n in nodes)


def test_stores_are_those_the_entering_walk_found():
    """constargs' stores: the body's own definitions are entered (one level), as its walk did."""
    function = _function()
    before = [n for n in own_nodes(function.body, frozenset({ast.Name})) if isinstance(n.ctx, (ast.Store, ast.Del))]
    after = constargs._stores(function)
    assert Counter(map(id, after)) == Counter(map(id, before))
    assert "hidden" in {n.id for n in after}  # in `nested`, a definition of the body


def _tested_locals_before(function) -> dict:
    """held_tests._tested_locals as it walked before it read function_code."""
    stores: dict[str, list] = {}
    wanted: set[str] = set()
    stack = list(function.body)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Name:
            if type(node.ctx) is not ast.Load:
                stores.setdefault(node.id, []).append(None)
            continue
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda):
            stores.setdefault(getattr(node, "name", ""), []).append(None)
            continue
        if kind in (ast.If, ast.While, ast.Assert, ast.IfExp):
            wanted.update(n.id for n in ast.walk(node.test) if type(n) is ast.Name)
        elif kind is ast.Call:
            wanted.update(a.id for a in node.args if type(a) is ast.Name)
            wanted.update(k.value.id for k in node.keywords if type(k.value) is ast.Name)
        elif kind is ast.Global or kind is ast.Nonlocal:
            for name in node.names:
                stores.setdefault(name, []).append(None)
        elif kind is ast.Assign and len(node.targets) == 1 and type(node.targets[0]) is ast.Name:
            stores.setdefault(node.targets[0].id, []).append(node.value)
            stack.append(node.value)
            continue
        stack.extend(ast.iter_child_nodes(node))
    args = function.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a}
    return {name: values[0] for name, values in stores.items()
            if name in wanted and name not in params and len(values) == 1 and values[0] is not None}


def test_tested_locals_are_those_the_own_walk_found():
    function = _function()
    found = held_tests._tested_locals(function)
    assert found == _tested_locals_before(function)
    # bound once and tested or passed: `check`, `value`; `ready` twice, `tag` annotated (not plain),
    # `b` unpacked, `hidden` the nested function's
    assert sorted(found) == ["check", "value"]


def test_interning_shares_what_it_shared_before_and_keeps_the_rest_apart():
    interner = Interner()
    big = 10_000
    first = {("f", "mod.step"): [(big, None, ("host", None)), (1, True)], "k": frozenset({"a", big}),
             "s": {"x"}, "l": [[big]], "e": ()}
    second = copy.deepcopy(first)
    expected = copy.deepcopy(first)
    done1, done2 = {}, {}
    a, b = interner.value(first, done1), interner.value(second, done2)
    assert a == b == expected
    key_a, key_b = next(iter(a)), next(iter(b))
    assert key_a is key_b  # a plain tuple of names: one object
    assert a[key_a][0] is b[key_b][0]  # of a number, None and a shared tuple: one object
    assert a[key_a][1] is not b[key_b][1]  # holds `True`: never shared (equal to a tuple holding 1)
    assert a["k"] is b["k"] and a["e"] is b["e"]
    assert a["l"] is first["l"] and a["l"][0][0] is b["l"][0][0]  # lists kept, rebuilt in place
    assert type(interner.value((1, [2]), {})) is tuple and (1, [2]) not in interner.tuples.values()


def test_constructions_are_the_calls_the_walk_entering_lambdas_found():
    from syncscope.lint.loops import _CALL, _own_calls
    from syncscope.lint.nodewalk import DEFINITIONS

    function = _function()
    before = own_nodes(function.body, _CALL, skip=DEFINITIONS, enter_block_definitions=False)
    after = _own_calls(function)
    assert Counter(map(id, after)) == Counter(map(id, before))
    assert "Inner" in {ast.unparse(c.func) for c in after}  # inside the lambda


def test_one_process_freezes_its_results_as_it_goes_and_gives_what_the_pool_gives(tmp_path):
    """-j 1 collects and freezes every COLLECT_EVERY files (analysis_runs.analyze_all); the findings
    are the pool's, and the run leaves nothing frozen behind."""
    import gc

    from lint_helpers import make_config
    from syncscope.lint.engine import lint_paths
    from syncscope.lint.pool_worker import COLLECT_EVERY

    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    for index in range(COLLECT_EVERY * 2 + 3):
        (root / f"m{index}.py").write_text(textwrap.dedent(f"""
            import torch

            def step{index}(t: torch.Tensor):
                return t.sum().item()
        """))
    config = make_config(tmp_path)

    def findings(**kw):
        return [(f.path, f.line, f.code) for f in lint_paths([str(root)], config, use_cache=False, **kw).findings]

    frozen = gc.get_freeze_count()
    alone = findings(jobs=1)
    assert gc.get_freeze_count() == frozen
    assert len(alone) >= COLLECT_EVERY * 2 + 3
    assert findings(jobs=2) == alone
