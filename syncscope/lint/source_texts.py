"""A linted file's text from its bytes, the one way every reader decodes it: the analysis (a
per-file fact taken from bytes already read) and the whole-program pass's scans
(text_scans.py, one file at a time, the tree's text never kept)."""

from __future__ import annotations


def text_of_bytes(data: bytes) -> str | None:
    """`data` as text (UTF-8, universal newlines, as `open(path, encoding="utf-8")` reads it), or
    None when it is not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
