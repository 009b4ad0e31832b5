"""A test that the test around it decides: the fallback a flag leaves to another platform.

SGLang 0.5.23's `causal_conv1d_fn` picks its Triton fallback with a flag:

    _HAS_CONV1D_KERNEL = is_cuda()                      # module level: true on CUDA
    ...
    use_triton = not _HAS_CONV1D_KERNEL or (x.stride(-1) != 1 and "seq_lens_cpu" in kwargs)
    if use_triton:
        if "seq_lens_cpu" not in kwargs:
            kwargs["seq_lens_cpu"] = _get_seq_lens_cpu(query_start_loc, x)   # `.cpu().tolist()`

Neither test is decided by itself (branches.Conditions reads `use_triton` as unknown), but on a
CUDA GPU `not _HAS_CONV1D_KERNEL` is false, so `use_triton` holds only where `"seq_lens_cpu" in
kwargs` does, and the inner test is false wherever it is reached: its block runs only on the
platforms without the kernel.

The rule: what the outer test still asks once the decided parts are read (three-valued, with the
platform and serving facts of branches.Conditions) is split into the tests that must all hold in
its body (`a and b`: both; `not (a or b)`: neither; `a or b` with `a` false: `b`). A test the body
begins with is then read with those as known; a block it leaves false (or an `else` it leaves
true) is cold. Only what cannot change between the two tests is used:
* a flag tested (`if use_triton:`, `if not use_triton:`) stands for the value bound to it by the
  statement just before the `if`, nothing between, when that value does not read the flag itself;
* only the first statement of the body is read, when it is an `if` (a later statement may change
  what the outer test saw: `kwargs["seq_lens_cpu"] = ...`), and only tests without a call or an
  assignment expression (a call may answer otherwise the second time);
* `a not in b`, `a is not b`, `a != b` and `not a` are the negations of `a in b`, `a is b`,
  `a == b` and `a`; any other test is known only when it is written the same way (`ast.dump`).

Everything returned is plain tuples (start, end, why), as branches.py's cold lines are.
"""

from __future__ import annotations

import ast
from .nodewalk import every_node

_NEGATED = {ast.NotIn: ast.In, ast.IsNot: ast.Is, ast.NotEq: ast.Eq}


def implied_cold(stmt: ast.If, previous, evaluate) -> list[tuple[int, int, str]]:
    """Cold lines of the `if` that `stmt`'s body begins with, decided by `stmt`'s test.
    `previous`: the statement before `stmt` in its block (None: none); `evaluate`: branches.Conditions."""
    inner = stmt.body[0] if stmt.body else None
    if not isinstance(inner, ast.If):
        return []
    held: dict[str, bool] = {}
    whys: list[str] = []
    _holding(_expanded(stmt.test, previous), True, evaluate, held, whys)
    if not held:
        return []
    value = _decide(inner.test, held, evaluate)
    cause = f"the test on line {stmt.lineno} leaves it {'true' if value else 'false'} here"
    why = f"{cause} ({whys[0]})" if whys else cause
    if value is False:
        return [(inner.body[0].lineno, inner.body[-1].end_lineno or inner.body[-1].lineno, why)]
    if value is True and inner.orelse:
        return [(inner.orelse[0].lineno, inner.orelse[-1].end_lineno or inner.orelse[-1].lineno, why)]
    return []


def _expanded(test: ast.expr, previous) -> ast.expr:
    """`use_triton` (or `not use_triton`) -> the value the statement just before bound it to."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    name = test.operand if negated else test
    if not isinstance(name, ast.Name) or not isinstance(previous, ast.Assign) or len(previous.targets) != 1:
        return test
    target = previous.targets[0]
    if not isinstance(target, ast.Name) or target.id != name.id or any(
            isinstance(n, ast.Name) and n.id == name.id for n in every_node(previous.value)):
        return test  # `flag = flag and ...`: the old `flag` is not the one tested later
    return ast.UnaryOp(op=ast.Not(), operand=previous.value) if negated else previous.value


def _holding(node: ast.expr, truth: bool, evaluate, held: dict, whys: list) -> None:
    """Note in `held` the tests that must be `truth` for `node` to be `truth`."""
    value, why = evaluate(node)
    if value is not None:
        return
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _holding(node.operand, not truth, evaluate, held, whys)
        return
    if isinstance(node, ast.BoolOp):
        each = isinstance(node.op, ast.And) == truth  # `a and b` true, `a or b` false: every part
        if each:
            for part in node.values:
                _holding(part, truth, evaluate, held, whys)
            return
        # `a or b` true (`a and b` false): only where every part but one is decided against it
        open_parts = []
        for part in node.values:
            decided, why = evaluate(part)
            if decided is None:
                open_parts.append(part)
            elif decided is truth:
                return  # cannot happen while the node is undecided; nothing to learn
            elif why:
                whys.append(why)
        if len(open_parts) == 1:
            _holding(open_parts[0], truth, evaluate, held, whys)
        return
    if _stable(node):
        key, negated = _key(node)
        held[key] = truth != negated


def _decide(node: ast.expr, held: dict, evaluate) -> bool | None:
    """The test's value where the `held` tests hold (None: unknown)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        value = _decide(node.operand, held, evaluate)
        return None if value is None else not value
    if isinstance(node, ast.BoolOp):
        values = [_decide(part, held, evaluate) for part in node.values]
        decisive = not isinstance(node.op, ast.And)  # a false part decides `and`, a true one `or`
        if decisive in values:
            return decisive
        return (not decisive) if all(v is (not decisive) for v in values) else None
    if _stable(node):
        key, negated = _key(node)
        if key in held:
            return held[key] != negated
    return evaluate(node)[0]


def _stable(node: ast.expr) -> bool:
    """A test that reads the same twice in a row: no call, no assignment expression."""
    return not any(isinstance(n, (ast.Call, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom))
                   for n in every_node(node))


def _key(node: ast.expr) -> tuple[str, bool]:
    """(the test written positively, negated?): `a not in b` -> (`a in b`, True)."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _NEGATED:
        positive = ast.Compare(left=node.left, ops=[_NEGATED[type(node.ops[0])]()], comparators=node.comparators)
        return ast.dump(positive), True
    return ast.dump(node), False
