"""Blocks a call decides, once the whole program knows what the call's targets do.

A file records, per function, the blocks that hang on one call: `(start, end, line of the
call)` (the `else` of a test of it, the block it ends). Which functions qualify is known per
file too, but the call usually reaches another module, so the decision is the whole program's:
a block is decided when every target the call at that line resolves to qualifies. Used by
errorpaths.py (calls that always raise) and cuda_dispatch.py (calls that tell whether the
inputs are on CUDA)."""

from __future__ import annotations


def recorded_functions(results: dict, field: str) -> set[str]:
    """The functions each result's `field` (`(functions, blocks)`) records as qualifying."""
    found: set[str] = set()
    for result in results.values():
        found.update((getattr(result, field, None) or ((), {}))[0])
    return found


def decided_blocks(program, edges: dict, results: dict, field: str, qualifies, why) -> dict[str, list]:
    """{path: [(start, end, why(short name of a target))]}: the blocks of each result's `field`
    (`(functions, {function: [(start, end, line)]})`) whose call at `line` resolves only to
    targets for which `qualifies(target)` holds."""
    found: dict[str, list] = {}
    for result in results.values():
        for qualname, blocks in (getattr(result, field, None) or ((), {}))[1].items():
            out = edges.get(qualname)
            if not out:
                continue
            for start, end, line in blocks:
                targets = {target for call, target, _ in out if call.line == line}
                if targets and all(qualifies(t) for t in targets):
                    short = sorted(targets)[0].rsplit(".", 1)[-1]
                    found.setdefault(program.path_of[qualname], []).append((start, end, why(short)))
    return found
