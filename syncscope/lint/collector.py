"""How a lint run keeps the cyclic garbage collector from scanning what it keeps.

A cold run's results and the whole-program pass's tables are millions of objects that live to
the run's end. CPython's collector scans every tracked object of a generation it collects, and
a full collection scans them all, so with its defaults the collector spent a quarter of the
parent process's CPU on a cold lint of whole vLLM 0.33.0 scanning objects that could never be
garbage (`python bench/lint_gc_time.py --root <tree> -- vllm --no-cache`: 4.25 of 18.6 s, 2.85
of them while the results arrived; with the two settings below 0.76 of 14.9 s). The pool's
workers run with the collector off and collect their own cycles every few files
(pool_worker.py).
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

# Second-generation collections per full one while the whole-program pass runs (CPython: 10).
PASS_FULL_COLLECTION_EVERY = 50


@contextlib.contextmanager
def paused_then_frozen() -> Iterator[None]:
    """Pause the collector while results arrive from the pool, or cached facts are loaded for a
    rerun's pass (`engine._load_facts`): unpickled data, no cycles (a collection at the end of
    whole vLLM's arrivals found none). Then freeze what arrived so that no later collection
    scans it. Paused, not collected every few files: a full
    collection of the files since the last freeze cost as much as the scans it saved. Were a
    cycle made here after all, it would only be held until `lint_paths` unfreezes."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


@contextlib.contextmanager
def fewer_full_collections() -> Iterator[None]:
    """The pass makes cycles (a recursive closure, a lambda on `self`), so the collector stays
    on: paused, they held ~25 MB more at the pass's peak. But its tables grow to millions of
    objects, and each full collection scans them all (on whole vLLM, 15 cost 1.24 of the
    pass's 9.0 s). Most of its cycles die young, in the generations collected as before; with
    a full collection every PASS_FULL_COLLECTION_EVERY second-generation ones, 4 are left
    (0.59 s) and the process's peak RSS is the same (354 MB; 373 MB at 200)."""
    thresholds = gc.get_threshold()
    gc.set_threshold(thresholds[0], thresholds[1], PASS_FULL_COLLECTION_EVERY)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
