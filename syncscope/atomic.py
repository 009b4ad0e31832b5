"""Writing a file whole or not at all: a temporary file beside the target, synced, then renamed
over it. Every layer that writes a report, baseline or page uses it.

Standard library only, and the process umask is read, never set (issue 28).
"""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any


def _proc_umask() -> int | None:
    """The umask as Linux (>= 4.7) shows it in /proc/self/status: read without setting it."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _umask_without_proc() -> int:
    # `os.umask` can only read the mask by setting it. Done once, at import, before the user's
    # program runs threads: a file one of them created while the mask was 0 would be
    # world-writable (issue 28).
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


_IMPORT_UMASK = None if _proc_umask() is not None else _umask_without_proc()


def _read_umask() -> int:
    """The process umask, never set here: from /proc each time (the program may change it), or
    the value read at import where there is no /proc."""
    mask = _proc_umask()
    return mask if mask is not None else (_IMPORT_UMASK if _IMPORT_UMASK is not None else 0o022)


def write_json_atomic(path: str, data: Any) -> None:
    """Write to a temporary file beside `path`, then rename: readers never see half a file."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_text_atomic(path, json.dumps(data, indent=1) + "\n")


def write_text_atomic(path: str, text: str) -> None:
    """A temporary file beside `path`, synced, then renamed over it: nobody opens half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".syncscope-", suffix=".tmp", dir=directory)
    try:
        os.chmod(tmp, 0o666 & ~_read_umask())  # mkstemp makes it private; a report is an ordinary file
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
