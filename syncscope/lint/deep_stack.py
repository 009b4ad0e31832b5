"""A file whose expressions nest hundreds deep: analyzed once more on a deeper stack.

The analysis walks trees recursively; Python's default limit stops it on generated code (a
sum of thousands of terms). Such a file is analyzed again in a thread with a 512 MiB stack and a
high recursion limit, where the walks reach tens of thousands of levels."""

from __future__ import annotations

import sys
import threading

STACK = 512 << 20
RECURSION = 60_000


class TooDeep(Exception):
    """The analysis recursed past Python's limit (an expression nested hundreds deep)."""


def on_a_deep_stack(analyze, *args):
    """`analyze(*args)` in a thread with a deep stack and a high recursion limit; None when it
    recursed too deep there as well."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(analyze(*args))
        except TooDeep:
            pass

    previous_limit, previous_stack = sys.getrecursionlimit(), threading.stack_size()
    try:
        threading.stack_size(STACK)
        sys.setrecursionlimit(RECURSION)
        worker = threading.Thread(target=run, name="syncscope-deep-file")
        worker.start()
        worker.join()
    finally:
        threading.stack_size(previous_stack)
        sys.setrecursionlimit(previous_limit)
    return outcome[0] if outcome else None
