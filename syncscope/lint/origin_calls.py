"""Which call a flagged value was computed from (wholeprogram.Solver.origin_value).

A rule's finding on a call's result (`torch.nonzero(mask_of(x))`) names that call, and the
whole-program pass asks the callee's return summary where the result lives. A finding is placed
on the first line of its anchor, while the call it names may sit on a later line of the same
statement:

    owned = torch.nonzero(                                   # the finding's line
        self.placement.local_mask(host_indices, rank)        # the call it names
    ).squeeze(1)

Only calls at or above the finding's line used to count, so the pass took the last call of that
name in an earlier statement, or none (then nothing was known: SGLang's
`PageInterleaveHostPool.owned_rows`, whose helper returns where its argument, host indices,
lives). The fact, about code: the value comes from a call of that name in the flagged statement
or, as before, from the last one above it. Each is a candidate; the value is known host data
only when every candidate gives host data, and otherwise takes the first candidate that does not
(its device, or the parameter it follows), so a call of that name in an earlier statement can no
longer stand in alone for the one the statement makes.
"""

from __future__ import annotations

from . import provenance as P


def origin_calls(calls: list, name: str, line: int, start: int | None) -> list[int]:
    """Indices of the candidate calls named `name`: the last at or above `line`, then those on
    later lines of the statement that starts at `start` (None: the first alone)."""
    best, later = None, []
    for index, call in enumerate(calls):
        if call.name != name:
            continue
        if call.line <= line:
            if best is None or call.line >= calls[best].line:
                best = index
        elif start is not None and call.stmt_start == start:
            later.append(index)
    return ([] if best is None else [best]) + later


def joined(values: list[tuple]) -> tuple:
    """(where, parameter it follows) of a value that is one of these: host data only when each
    is host data or a Python value; else the first that is not."""
    if not values:
        return (P.UNKNOWN, None)
    for where, follows in values:
        if follows is not None or not P.known_host(where):
            return (where, follows)
    return (P.join(*(where for where, _ in values)), None)
