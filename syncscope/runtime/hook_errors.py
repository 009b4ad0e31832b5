"""Internal errors of syncscope's own hooks: caught, counted for the report, shown once.

A detector hook runs inside the user's program, on tensors syncscope did not create. When it
fails (a tensor kind it does not know, a bug of ours), the program must go on exactly as under
plain python: the hook gives up on classifying that one call, the error is counted here and
lands in the report's `errors` list, and one line on stderr says so (once per process).
"""

from __future__ import annotations

import os
import sys
import threading

_lock = threading.Lock()
_counts: dict[tuple[str, str], int] = {}
_shown = [False]


def note(where: str, exc: BaseException) -> None:
    """Count an internal error of the hook `where`. Never raises."""
    try:
        message = f"{type(exc).__name__}: {exc}"[:300]
    except Exception:  # a hostile __str__ must not escape either
        message = type(exc).__name__
    with _lock:
        key = (where, message)
        _counts[key] = _counts.get(key, 0) + 1
        first = not _shown[0]
        _shown[0] = True
    if first:
        try:
            from syncscope.terminal import safe_text

            print(
                f"syncscope: internal error in {where} ({safe_text(message)}); the program goes on "
                "and the report counts it under \"errors\"",
                file=sys.stderr,
                flush=True,
            )
        except Exception:
            pass


def snapshot() -> list[dict]:
    """The errors so far, for the report: one entry per (hook, message) with its count."""
    with _lock:
        return [{"where": where, "error": message, "count": count} for (where, message), count in sorted(_counts.items())]


def reset() -> None:
    with _lock:
        _counts.clear()
        _shown[0] = False


def _after_fork_in_child() -> None:
    """A forked child (a multiprocessing worker) writes a report of its own: the parent's counts
    are the parent's to report (`combine` would add them twice), and its line on stderr was the
    parent's. The lock is made anew: another thread may have held it at the fork."""
    global _lock
    _lock = threading.Lock()
    _counts.clear()
    _shown[0] = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
