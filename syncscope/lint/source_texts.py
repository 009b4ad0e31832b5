"""The linted files' text, read again in the whole-program pass by the facts that scan it
(through text_scans.py): one file at a time, the tree's text never kept; and the same text of
bytes already read, for a per-file fact taken from it."""

from __future__ import annotations


def source_text(path: str, sources: dict | None) -> str | None:
    """The text of linted file `path` (`sources`: each path's file, the engine's absolute
    paths; else the path as it is), or None when it cannot be read."""
    try:
        with open((sources or {}).get(path, path), encoding="utf-8") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def text_of_bytes(data: bytes) -> str | None:
    """`data` as `source_text` reads a file that holds it (UTF-8, universal newlines), or None
    when it is not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
