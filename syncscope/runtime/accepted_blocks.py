"""Syncs inside a block the code accepts them in (`with gpu_sync_allowed():`), at run time.

vLLM marks the syncs it accepts with `with gpu_sync_allowed():`; its own check lets every sync
inside pass, callees included, but only while that check is switched on (otherwise the manager
is a no-op, and nothing at run time says the block was entered). The linter marks those syncs
`accepted` (syncscope/with_blocks.py); the trap records them allowed with the same words, so a
baseline never holds them and the gate never fails on them, and the two halves of the tool
agree.

A sync is accepted when any frame on its stack is inside such a block: the frame's line lies in
the body of a `with` of a built-in accepting manager (`with_blocks.ACCEPTING_MANAGERS`), read
from the frame's source file. Each file is read once, and parsed only when its text names a manager; a
sync is rare, so this costs nothing on the hot path.
"""

from __future__ import annotations

import ast
import linecache

from syncscope.with_blocks import ACCEPTING_MANAGERS, accepted_block

_blocks: dict[str, tuple[tuple[int, int, str], ...]] = {}  # filename -> (start, end, why)
# the last word of each manager's name: a file whose text has none of them holds no such block
_WORDS = tuple({name.rsplit(".", 1)[-1] for name in ACCEPTING_MANAGERS})


def reason(frame) -> str | None:
    """Why the sync seen at `frame` is accepted by the code, or None."""
    while frame is not None:
        filename = frame.f_code.co_filename
        blocks = _blocks.get(filename)
        if blocks is None:
            blocks = _blocks[filename] = _read(filename)
        if blocks:
            line = frame.f_lineno
            for start, end, why in blocks:
                if start <= line <= end:
                    return why
        frame = frame.f_back
    return None


def _read(filename: str) -> tuple:
    if filename.startswith("<"):
        return ()
    text = "".join(linecache.getlines(filename))
    if not any(word in text for word in _WORDS):
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    found = []
    for node in ast.walk(tree):
        why = accepted_block(node, ACCEPTING_MANAGERS)
        if why is not None:
            found.append((node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno, why))
    return tuple(found)
