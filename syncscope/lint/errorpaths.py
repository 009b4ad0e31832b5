"""Error paths: code that runs only on the way to an exception, so not in a serving step.

`if bool(bad_q.any().item()): idx = int(bad_q.nonzero()[0].item()); raise ValueError(f"... {idx}")`
syncs in its test every step (that stays a finding), but the `.item()` that formats the message
runs only when the step is about to fail. Three shapes, all cold:
* a block (an `if` body or `else`) whose every path ends in `raise` and that cannot leave
  otherwise (no `return` / `break` / `continue` in it);
* a function all of whose paths raise (`_raise_stale_slot_assertion(self, ...)`: builds a
  message and raises); its syncs then do not count for its callers either. Not an abstract
  stub (`raise NotImplementedError`, `@abstractmethod`): a call to it runs an override;
* a block that ends in a call to such a function (`if bad: self._raise_stale(...)`), decided
  over the whole program once calls are resolved (`error_lines`), since the function may live
  in another file.
And an `assert`'s message (`assert ok, f"... {pages.tolist()}"`), built only when the test fails
(SGLang's SWA component prints the pages it found dead), where it has lines of its own: lines are
the unit of coldness. A block inside a `try` body is left alone: the same function may catch
the exception and go on (an exception used as control flow). branches.py walks the file and
calls the predicates here.

Everything recorded is plain tuples: it is pickled into the lint cache.
"""

from __future__ import annotations

import ast

from .callblocks import decided_blocks, recorded_functions
from .nodewalk import own_nodes

_LEAVES = (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom)
# what may leave a block early, or catch its raise (`try`, and `try/except*` where Python has it)
_EXITS = frozenset(_LEAVES + (ast.Try,) + ((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
_RAISE = frozenset({ast.Raise})


def ends_in_raise(body) -> bool:
    """Every path through the block ends in `raise` (the last statement is one, or an `if` /
    `with` whose branches all end in one)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Raise):
        return True
    if isinstance(last, ast.If):
        return ends_in_raise(last.body) and ends_in_raise(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return ends_in_raise(last.body)
    return False


def _cannot_leave(body) -> bool:
    """No `return`, `break`, `continue` (or `yield`, which hands control out) in the block:
    a path that leaves early is a normal path. A `try` in it may swallow the raise: refused too."""
    return not own_nodes(body, _EXITS)


def error_block(body) -> bool:
    """The block runs only on the way to an exception."""
    return ends_in_raise(body) and _cannot_leave(body)


def always_raises(function) -> bool:
    """Every path of the function raises: its body is an error block (not a generator, whose
    body runs only when iterated, nor one that returns anywhere). An abstract stub (`raise
    NotImplementedError`, `@abstractmethod`) is not one: a call resolved to it runs an override."""
    if not error_block(function.body):
        return False
    for decorator in function.decorator_list:
        name = decorator.attr if isinstance(decorator, ast.Attribute) else getattr(decorator, "id", "")
        if "abstract" in name:
            return False
    for node in own_nodes(function.body, _RAISE):
        if node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if (exc.attr if isinstance(exc, ast.Attribute) else getattr(exc, "id", "")) == "NotImplementedError":
                return False
    return True


def assert_message(stmt: ast.Assert, following) -> ast.expr | None:
    """The message of `stmt` when no line of it holds the test or `following` (the statement
    after it in the block, or None), else None."""
    message = stmt.msg
    if message is None or message.lineno <= (stmt.test.end_lineno or stmt.test.lineno):
        return None
    if following is not None and following.lineno <= (message.end_lineno or message.lineno):
        return None
    return message


def tail_call_line(body) -> int | None:
    """The line of the call a block ends in (`self._raise_stale(free_v=...)` as a statement),
    when nothing in the block can leave it early: the whole-program pass asks whether that call
    always raises."""
    last = body[-1] if body else None
    if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and _cannot_leave(body):
        return last.value.lineno
    return None


def error_lines(program, edges: dict, results: dict) -> dict[str, list]:
    """{path: [(start, end, why)]}: the blocks that end in a call every resolved target of which
    always raises."""
    raising = recorded_functions(results, "error_paths")
    if not raising:
        return {}
    # a method resolved by the receiver's declared class may run a subclass's override: it
    # counts only when every method of that name in the tree always raises
    methods: dict[str, list] = {}
    for qualname in program.functions:
        owner, _, short = qualname.rpartition(".")
        if owner in program.classes:
            methods.setdefault(short, []).append(qualname)

    def raises(target: str) -> bool:
        owner, _, short = target.rpartition(".")
        if target not in raising:
            return False
        return owner not in program.classes or all(m in raising for m in methods.get(short, ()))

    return decided_blocks(program, edges, results, "error_paths", raises,
                          lambda short: f"error path: the block ends in a call to `{short}`, every path of which raises")


def always_exits(body) -> bool:
    """An arm that ends in `return` / `raise` (or an `if`/`else` whose arms both do)."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.If) and bool(last.orelse) and always_exits(last.body) and always_exits(last.orelse)
