"""Constants that `torch.compile` bakes into the compiled graph: no copy per call.

    E2M1_BOUNDS = (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)

    @torch.compile
    def batched_quantize(tensor):
        bounds = tensor.new_tensor(E2M1_BOUNDS, dtype=torch.float32)   # a constant in the graph

Eager PyTorch copies the tuple to the device on every call (SYN401/SYN402). Dynamo traces the
function once per guard set, and inductor folds a tensor built from Python constants into the
compiled code: checked on an H200 (issue 24's SGLang sample, `kvfp4_tensor.py:87`), the compiled
call showed no host-to-device memcpy and no stream synchronize, while the eager `new_tensor`
showed both. So in a function decorated with `torch.compile` (bare or called:
`@torch.compile(dynamic=True)`), a tensor built from a literal of numbers, or from a name the
module binds once to one, or from a part of either taken with literal bounds (`E2M1_VALUES[:8]`,
SGLang's `batched_dequantize`), copies nothing per call. Data that is not such a constant (a list the
caller passes, a value computed at run time) is still reported: dynamo guards on it, and a new
value recompiles or copies.
"""

from __future__ import annotations

import ast

import libcst as cst

from .imports import dotted

_COMPILE = frozenset(("torch.compile", "torch._dynamo.optimize"))


def _number(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _literal_numbers(node: cst.BaseExpression) -> bool:
    """`(0.25, 0.75)`, `[1, -2.0]`, `[[1, 2], [3, 4]]`, or a number."""
    if isinstance(node, (cst.Tuple, cst.List)):
        return bool(node.elements) and all(
            isinstance(e, cst.Element) and _literal_numbers(e.value) for e in node.elements)
    return _number(node)


def is_compiled(ctx) -> bool:
    """The function being walked is decorated with `torch.compile` (or its dynamo spelling)."""
    node = getattr(ctx, "node", None)
    for decorator in getattr(node, "decorators", ()) or ():
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            expr = expr.func
        if ctx.resolve(expr) in _COMPILE:
            return True
    return False


def module_constants(module: cst.Module) -> frozenset[str]:
    """Names the module binds exactly once, at its top level, to a literal of numbers."""
    bound: dict[str, int] = {}
    literal: set[str] = set()
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            targets, value = (), None
            if isinstance(small, cst.Assign):
                targets, value = tuple(t.target for t in small.targets), small.value
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                targets, value = (small.target,), small.value
            for target in targets:
                name = dotted(target) if isinstance(target, cst.Name) else None
                if name is None:
                    continue
                bound[name] = bound.get(name, 0) + 1
                if len(targets) == 1 and value is not None and _literal_numbers(value):
                    literal.add(name)
    return frozenset(name for name in literal if bound.get(name) == 1)


def _ast_literal_numbers(node: ast.AST) -> bool:
    if isinstance(node, (ast.Tuple, ast.List)):
        return bool(node.elts) and all(_ast_literal_numbers(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def tree_constants(tree: ast.Module) -> frozenset[str]:
    """`module_constants` from the file's `ast` (the worker walks one function at a time, parsed
    on its own: the analyzer then sees no module body)."""
    bound: dict[str, int] = {}
    literal: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                bound[target.id] = bound.get(target.id, 0) + 1
                if len(targets) == 1 and _ast_literal_numbers(value):
                    literal.add(target.id)
    return frozenset(name for name in literal if bound.get(name) == 1)


def _constant_part(node: cst.Subscript) -> bool:
    """`[:8]`, `[2:-1]`, `[0]`: one index or slice whose bounds are integer literals (or left
    out), so the part taken of a constant is a constant too."""
    if len(node.slice) != 1:
        return False
    index = node.slice[0].slice
    if isinstance(index, cst.Index):
        return _integer(index.value)
    if isinstance(index, cst.Slice):
        return all(bound is None or _integer(bound) for bound in (index.lower, index.upper, index.step))
    return False


def _integer(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, cst.Integer)


def compiled_constant(ctx, data: cst.BaseExpression | None) -> bool:
    """`data` is a constant of numbers, or a literal index or slice of one (`E2M1_VALUES[:8]`),
    and the function is compiled: no copy per call."""
    if data is None or not is_compiled(ctx):
        return False
    while isinstance(data, cst.Subscript) and _constant_part(data):
        data = data.value
    if _literal_numbers(data):
        return True
    if isinstance(data, cst.Name) and data.value not in ctx.env:
        analyzer = ctx.analyzer
        constants = getattr(analyzer, "compiled_constants", None)
        if constants is None:  # the whole module is walked: its body is at hand
            constants = analyzer.compiled_constants = module_constants(analyzer.module)
        return data.value in constants
    return False
