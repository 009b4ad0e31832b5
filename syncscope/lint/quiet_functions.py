"""Functions no rule can fire in, told from Python's `ast` before libcst parses them.

The per-function rules hear of a function's code through five events only (worker.Registry): a
call whose last name a rule listens for, a read of a syncing property, a subscript read, a
subscript store, and a value used as a truth value. A function whose code holds none of them,
or only forms whose place the analyzer gives without looking further (a constant index, an
`is None` test), yields no finding and no latent sync, so libcst's parse of it (the largest
single part of a cold run) and its walk are skipped. On whole vLLM about 83% of the functions
the text trigger lets through yield nothing; this test skips the share of those that plainly
cannot (docs/lint.md, session 38).

What the analyzer decides from the forms kept as quiet here (evaluate.py): a comparison with
`is`, `is not`, `in` or `not in`, or with a string, is a Python bool; a number, string,
`True`/`False`/`None` is a Python value; none of them is a tensor or an unknown value, which is
what the truth-value rule (SYN206) needs. A constant index or slice bound is neither a boolean
mask (SYN101), a host index (SYN407) nor a tensor bound (SYN408). Annotations are read for
their shape, never evaluated, so their subscripts (`Optional[Tensor]`) raise no event.
"""

from __future__ import annotations

import ast

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TESTED = (ast.If, ast.While, ast.IfExp, ast.Assert)
_QUIET_COMPARISONS = (ast.Is, ast.IsNot, ast.In, ast.NotIn)


def may_fire(function: ast.AST, call_names, attribute_names, aliases: dict[str, str]) -> bool:
    """Whether any rule could hear of something in `function` (its decorators, defaults and
    nested code included). `call_names`: the last names the call rules listen for;
    `attribute_names`: the syncing properties' names; `aliases`: the module's imports (a call
    of `nz(x)` after `from torch import nonzero as nz` is dispatched as `nonzero`)."""
    stack: list = [function]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Call:
            func = node.func
            if type(func) is ast.Attribute:
                if func.attr in call_names:
                    return True
            elif type(func) is ast.Name:
                target = aliases.get(func.id)
                if func.id in call_names or (target is not None and target.rsplit(".", 1)[-1] in call_names):
                    return True
        elif kind is ast.Attribute:
            if node.attr in attribute_names:
                return True
        elif kind is ast.Subscript:
            if type(node.ctx) is not ast.Load or not _constant_index(node.slice):
                return True
        elif kind in _TESTED:
            if not _quiet_test(node.test):
                return True
        elif kind is ast.BoolOp:
            if not all(_quiet_test(value) for value in node.values):
                return True
        elif kind is ast.UnaryOp:
            if type(node.op) is ast.Not and not _quiet_test(node.operand):
                return True
        elif kind is ast.comprehension:
            if not all(_quiet_test(test) for test in node.ifs):
                return True
        elif kind is ast.Import or kind is ast.ImportFrom:
            # a local alias: `nz(x)` after `from torch import nonzero as nz` is a `nonzero` call
            if any(alias.name.rsplit(".", 1)[-1] in call_names for alias in node.names):
                return True
        elif kind is ast.Match:
            return True  # a form this test does not read: walk it
        stack.extend(_children(node))
    return False


def _children(node) -> list:
    """The nodes the analyzer may evaluate under `node`: all but annotations."""
    kind = type(node)
    if kind in _DEFINITIONS:
        arguments = node.args
        return [*node.decorator_list, *arguments.defaults, *(d for d in arguments.kw_defaults if d is not None),
                *node.body]
    if kind is ast.arguments:
        return [*node.defaults, *(d for d in node.kw_defaults if d is not None)]
    if kind is ast.AnnAssign:
        return [node.target] + ([node.value] if node.value is not None else [])
    return list(ast.iter_child_nodes(node))


def _quiet_test(test) -> bool:
    """A truth-value test whose own value the analyzer takes for a Python value (its parts are
    walked on their own)."""
    kind = type(test)
    if kind is ast.Constant:
        return True
    if kind is ast.Compare:
        return any(type(op) in _QUIET_COMPARISONS for op in test.ops) or any(
            type(part) is ast.Constant and type(part.value) is str for part in (test.left, *test.comparators))
    if kind is ast.BoolOp:
        return all(_quiet_test(value) for value in test.values)
    if kind is ast.UnaryOp and type(test.op) is ast.Not:
        return _quiet_test(test.operand)
    return False


def _constant_index(index) -> bool:
    """`x[0]`, `x["key"]`, `x[-1]`, `x[1:]`, `x[:, 0]`, `x[..., None]`."""
    kind = type(index)
    if kind is ast.Constant:
        return type(index.value) is not bool
    if kind is ast.UnaryOp:
        return type(index.op) is ast.USub and type(index.operand) is ast.Constant
    if kind is ast.Slice:
        return all(bound is None or _constant_index(bound) for bound in (index.lower, index.upper, index.step))
    if kind is ast.Tuple:
        return all(_constant_index(element) for element in index.elts)
    return False
