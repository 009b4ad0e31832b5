"""Kernels that dispatch on where their inputs live: the fallback after the test never syncs.

    def inputs_on_cuda(*args, **kwargs) -> bool:      # in a shared module
        for value in (*args, *kwargs.values()):
            if isinstance(value, torch.Tensor):
                return value.is_cuda
        raise AssertionError("needs a tensor")

    class BlockwiseRejection:
        @classmethod
        def execute(cls, *args, **kwargs):
            if inputs_on_cuda(*args, **kwargs):
                return blockwise_rejection_triton(*args, **kwargs)
            return blockwise_rejection_torch(*args, **kwargs)   # .item() inside: host inputs only

A function every `return` of which hands back `<value>.is_cuda` (and that cannot end without a
`return` or a `raise`) tells whether its input is on the GPU. After `if f(...): return ...`, and
in the body of `if not f(...):`, the inputs are host data, or on another platform's device: on a
CUDA GPU such lines never wait for it (branches.py reads a test of `x.is_cuda` itself the same
way). The helper is usually in another module, so the decision is the whole program's
(`dispatch_lines`, asked by callguards.decided_lines), through the resolved call at the test's
line, as errorpaths.error_lines decides calls that always raise.

Per file, only the tests that call a name with `cuda` in it are kept (SGLang's
`inputs_on_cuda`, `_inputs_on_cuda`): the decision still reads the callee's body, the name
only keeps the per-file record small. Module-level functions only: a method may be overridden.
"""

from __future__ import annotations

import ast

from .callblocks import decided_blocks, recorded_functions
from .lines import last_line
from .nodewalk import own_nodes


def is_dispatcher(function) -> bool:
    """Every `return` of `function` hands back an `.is_cuda`, and it ends in `return` / `raise`."""
    last = function.body[-1] if function.body else None
    if function.decorator_list or isinstance(function, ast.AsyncFunctionDef) or not isinstance(last, (ast.Return, ast.Raise)):
        return False  # a coroutine function hands back a coroutine, always true
    if isinstance(last, ast.Return) and not (isinstance(last.value, ast.Attribute) and last.value.attr == "is_cuda"):
        return False  # most functions: no walk of the body
    found = False
    for node in own_nodes(function.body, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await), enter_block_definitions=False):
        if not isinstance(node, ast.Return):
            return False  # a generator or a coroutine
        if not (isinstance(node.value, ast.Attribute) and node.value.attr == "is_cuda"):
            return False
        found = True
    return found


def dispatch_blocks(stmt: ast.If, rest: tuple | None) -> list[tuple[int, int, int]]:
    """[(start, end, line of the test's call)]: the lines that run only when the call (if it is
    a dispatcher) says the inputs are not on CUDA. `rest`: the statements after `stmt` in its
    block, (first, last) or None."""
    test, negated = stmt.test, False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, True
    if not (isinstance(test, ast.Call) and "cuda" in _called_name(test.func).lower()):
        return []
    line = test.lineno
    if negated:
        return [(stmt.body[0].lineno, last_line(stmt.body[-1]), line)]
    found = []
    if stmt.orelse:
        found.append((stmt.orelse[0].lineno, last_line(stmt.orelse[-1]), line))
    elif rest is not None and isinstance(stmt.body[-1], (ast.Return, ast.Raise)):
        found.append((rest[0].lineno, last_line(rest[1]), line))
    return found


def dispatch_lines(program, edges: dict, results: dict) -> dict[str, list]:
    """{path: [(start, end, why)]}: the blocks decided by a call whose every resolved target is
    a dispatcher."""
    dispatchers = recorded_functions(results, "cuda_tests")
    if not dispatchers:
        return {}
    return decided_blocks(program, edges, results, "cuda_tests", dispatchers.__contains__,
                          lambda short: f"never on CUDA: `{short}` tells whether the inputs are on the GPU, "
                                        f"and this runs only when they are not")


def _called_name(func) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""

