"""Test programs mark the lines a detector must name with a trailing comment (`# item-site`);
these find them, so that tests do not hard-code line numbers."""

from __future__ import annotations

import os


def marked_line(path: str, marker: str) -> int:
    """The line of `path` that ends with the comment `# marker`."""
    with open(path) as f:
        for number, text in enumerate(f, start=1):
            if text.rstrip().endswith(f"# {marker}"):
                return number
    raise AssertionError(f"no line ends with '# {marker}' in {path}")


def events_in(events, path: str) -> list:
    """The events whose site is in the file `path` (by base name: reports hold relative paths)."""
    name = os.path.basename(path)
    return [e for e in events if os.path.basename(e.site.path) == name]
