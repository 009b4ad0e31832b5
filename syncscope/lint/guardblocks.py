"""The lines an early exit guards: `if lora_info is None: return None` leaves the rest of its
block to run only when the test is false.

constargs.py records the `if` blocks tested on a function's parameters; a sync written after
such an early exit instead of inside an `else` is guarded just the same. SGLang's MoE runner:

    def run(self, dispatch_output, quant_info, lora_info=None):
        def _maybe_build_lora_hooks(x):
            if not self.lora_enabled or lora_info is None:
                return None
            return build_lora_hooks(x, lora_info, ...)   # syncs: only when lora_info is passed

Only an `if` with no `else` whose body ends in `return` or `raise` (it cannot fall through) is
an early exit; the guarded lines are the statements after it in the same block (inside a loop
or a `with`, the rest of that body: the function has left before the loop goes round again).
A test that reads a parameter the function rebinds anywhere is no guard here: the value tested
may not be the one the caller passed (`x = x or default()` before `if x is None: return`).
"""

from __future__ import annotations

import ast


_EXITS = (ast.Return, ast.Raise)
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def statement_blocks(body: list):
    """`body` and every statement block nested in it, not entering definitions."""
    yield body
    for stmt in body:
        if isinstance(stmt, _NESTED):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from statement_blocks(inner)
        for handler in getattr(stmt, "handlers", ()) or ():
            yield from statement_blocks(handler.body)
        for case in getattr(stmt, "cases", ()) or ():
            yield from statement_blocks(case.body)


def early_exits(body: list, compile_test) -> list[tuple[int, int, tuple]]:
    """[(first line, last line, test)] of the statements after each early exit of `body` (a
    function's), with `test` the compiled negation of the exit's test. `compile_test(node)` gives
    a test tuple or None (constargs.py's, which also keeps out the parameters rebound)."""
    found = []
    for block in statement_blocks(body):
        for index, stmt in enumerate(block[:-1]):
            if not (isinstance(stmt, ast.If) and not stmt.orelse and isinstance(stmt.body[-1], _EXITS)):
                continue
            test = compile_test(stmt.test)
            if test is None:
                continue
            last = block[-1]
            found.append((block[index + 1].lineno, getattr(last, "end_lineno", None) or last.lineno,
                          ("not", test)))
    return found


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def stored_before(body: list, names: frozenset, stored: list):
    """A function `(name, line) -> bool`: may `name` hold something other than what the caller
    passed when a test on line `line` runs? It may when the function stores into it on an
    earlier line (`if out is None: out = torch.empty(...)` before `if ... and out is not None:`
    in vLLM's `_fmha_sm100`), or anywhere in a loop around that line. A store after the test
    (`if num_kv_splits < 1: ... num_kv_splits = 1`) leaves the test reading the caller's value.
    `stored`: the `Name` nodes the body's own code stores into or deletes (the caller has them)."""
    if not names:
        return lambda name, line: False
    stores: dict[str, list[int]] = {}
    loops: list[tuple[int, int]] = []
    for block in statement_blocks(body):
        for stmt in block:
            if isinstance(stmt, _LOOPS):
                loops.append((stmt.lineno, getattr(stmt, "end_lineno", None) or stmt.lineno))
    for node in stored:
        if node.id in names:
            stores.setdefault(node.id, []).append(node.lineno)

    def stale(name: str, line: int) -> bool:
        lines = stores.get(name)
        if not lines:
            return False
        if any(at < line for at in lines):
            return True
        return any(start <= line <= end and any(start <= at <= end for at in lines) for start, end in loops)
    return stale
