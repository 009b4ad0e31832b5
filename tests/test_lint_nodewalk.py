"""The fast walk over a block's own nodes (syncscope/lint/nodewalk.py) finds exactly what a
walk with `ast.iter_child_nodes` finds, in the same order (constargs.py numbers the `if` guards
it finds in that order), and stops at the nested scopes it is told to."""

from __future__ import annotations

import ast
import textwrap

from syncscope.lint.nodewalk import DEFINITIONS, SCOPES, own_nodes

SOURCE = textwrap.dedent("""
    def outer(self, x, flag=False):
        if flag:
            y = Encoder(x)(lambda: Inner(x))
        elif x > 1:
            raise ValueError(f"{x!r} {fmt(x)}")
        global counter
        for i, (a, b) in enumerate(zip(x, x)):
            match a:
                case {"k": v, **rest} if check(v):
                    call(v)
                case Point(x=0, y=other):
                    pass
        def nested():
            if flag:
                return Hidden()
        class Local:
            made = Built()
        return [g(z) for z in x if z] or {k: h(k) for k in x} or torch.zeros(len(x), device=d)
""")


def reference(body, wanted, skip, enter_block_definitions):
    """The walk the fast one replaces: every child from ast.iter_child_nodes, from a stack."""
    found, stack = [], [(node, True) for node in body]
    while stack:
        node, top = stack.pop()
        if type(node) in skip and not (top and enter_block_definitions):
            continue
        if type(node) in wanted:
            found.append(node)
        stack.extend((child, False) for child in ast.iter_child_nodes(node))
    return found


def test_same_nodes_in_the_same_order_as_iter_child_nodes():
    tree = ast.parse(SOURCE)
    function = tree.body[0]
    for wanted in ({ast.Call}, {ast.If, ast.Call}, {ast.Raise, ast.Return}, {ast.Name}):
        for skip, enter in ((SCOPES, True), (DEFINITIONS, False), (DEFINITIONS, True)):
            expected = reference(function.body, wanted, skip, enter)
            assert own_nodes(function.body, wanted, skip, enter) == expected
    calls = [ast.unparse(c.func) for c in own_nodes(function.body, {ast.Call}, DEFINITIONS, False)]
    # the lambda's call is the block's (only definitions are skipped), the nested def's and
    # class's are not; the comprehensions' and the match guard's are
    assert "Inner" in calls and "fmt" in calls and "check" in calls and "h" in calls and "torch.zeros" in calls
    assert "Hidden" not in calls and "Built" not in calls


def test_lambdas_skipped_and_a_block_definition_entered():
    tree = ast.parse(SOURCE)
    body = tree.body[0].body
    calls = [ast.unparse(c.func) for c in own_nodes(body, {ast.Call})]
    assert "Inner" not in calls and "fmt" in calls  # a lambda's code is not the block's
    # a definition that is a statement of the block is entered (errorpaths.py's reading of a
    # block), one further down is not
    assert "Hidden" in calls and "Built" in calls
    returns = own_nodes(tree.body, {ast.Return})
    assert [r.lineno for r in returns] == [19]


def test_breadth_first_is_ast_walks_order():
    from syncscope.lint.nodewalk import nodes_breadth_first

    function = ast.parse(SOURCE).body[0]
    for wanted in ({ast.Call}, {ast.FunctionDef, ast.If, ast.Call}, {ast.Name}):
        expected = [node for node in ast.walk(function) if type(node) in wanted]
        assert nodes_breadth_first(function, wanted) == expected
    # nested definitions and lambdas are walked too, as ast.walk does
    assert {"Hidden", "Built", "Inner"} <= {ast.unparse(c.func) for c in nodes_breadth_first(function, {ast.Call})}


def test_every_node_is_ast_walk_and_its_shared_lists_let_the_tree_go():
    import gc
    import weakref

    from syncscope.lint.nodewalk import every_node

    tree = ast.parse(SOURCE)
    for node in ast.walk(tree):
        for _ in range(2):  # the second time from the shared list of a definition or module
            assert [id(n) for n in every_node(node)] == [id(n) for n in ast.walk(node)]
    # a shared list holding its own key would keep every parsed file alive for the whole run
    gone = weakref.ref(tree)
    del tree, node
    gc.collect()
    assert gone() is None


def test_host_function_patterns_translated_once_and_matching_as_globs():
    from syncscope.lint.branches import _patterns

    patterns = ("vllm.v1.engine.*", "*.detokenizer.decode_*")
    compiled = _patterns(patterns)
    assert _patterns(tuple(patterns)) is compiled  # cached for an equal tuple
    assert compiled.match("vllm.v1.engine.core.step") and compiled.match("a.detokenizer.decode_one")
    assert not compiled.match("vllm.v1.worker.gpu_model_runner.execute_model")
    assert _patterns(()) is None
