"""Making untrusted text safe to print on a terminal.

File names, function names, source lines and messages in a report can come from anywhere (a CI
artifact, a repository with hostile file names). Printed raw, `ESC ] 0 ; title BEL` retitles the
terminal and CSI sequences recolour it or move the cursor. Every console renderer passes such
text through `safe_text`, which shows each control character escaped instead of emitting it.
"""

from __future__ import annotations

import re
import unicodedata

# C0 controls (except TAB), DEL, C1 controls (0x80-0x9f: 0x9b is a one-byte CSI), and the
# Unicode format/separator characters that reorder or hide text (bidi overrides, line separators).
_UNSAFE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_MULTILINE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match) -> str:
    char = match.group()
    code = ord(char)
    if char == "\n":
        return "\\n"
    if char == "\r":
        return "\\r"
    if char == "\x1b":
        return "\\x1b"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def safe_text(text: object, *, multiline: bool = False) -> str:
    """`text` as a string with every control character written as an escape (`\\x1b`, `\\x07`,
    `\\x9b`, `\\u202e`, ...). Newlines are escaped too unless `multiline`; tabs are kept.
    Surrogates from undecodable file names are shown escaped rather than failing to encode."""
    if not isinstance(text, str):
        text = str(text)
    pattern = _UNSAFE_MULTILINE if multiline else _UNSAFE
    text = pattern.sub(_escape, text)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):  # os.fsdecode's surrogateescape leftovers
        text = "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    return text


def is_safe(text: str) -> bool:
    """No character of `text` would be interpreted by a terminal (for tests and assertions)."""
    return not any(
        (ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F or unicodedata.category(c) in ("Zl", "Zp")
        for c in text
    )


class SafeStream:
    """A text stream that shows control characters escaped (newlines and tabs kept): wraps the
    output of a human-readable renderer without touching each of its lines."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(safe_text(text, multiline=True))

    def __getattr__(self, name):
        return getattr(self._stream, name)
