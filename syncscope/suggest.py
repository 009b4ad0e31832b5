"""The nearest valid name, for errors about a name that names nothing (issue 28: a typo in a
selector must never switch a check off silently). Standard library only: the linter, the runtime
and the gate all use it.
"""

from __future__ import annotations

import difflib
from typing import Iterable

# The tables of `[tool.syncscope]` in pyproject.toml, each read by the command of that name.
TOOL_TABLES = ("lint", "run")


def nearest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to `word` (difflib's ratio, at least 0.6), compared case-blind."""
    by_upper: dict[str, str] = {}
    for candidate in candidates:
        by_upper.setdefault(candidate.upper(), candidate)
    found = difflib.get_close_matches(word.upper(), list(by_upper), n=1)
    return by_upper[found[0]] if found else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`"; did you mean 'x'?"` for the nearest candidate, or `""` when none is near."""
    found = nearest(word, candidates)
    return f"; did you mean {found!r}?" if found else ""


def unknown_tool_table(data: dict, path: str) -> str | None:
    """The error for a `[tool.syncscope.X]` table no command reads (`[tool.syncscope.lnt]`), or
    None. Keys of `[tool.syncscope]` itself that are not tables are left to the commands."""
    tool = data.get("tool")
    syncscope = tool.get("syncscope") if isinstance(tool, dict) else None
    if not isinstance(syncscope, dict):
        return None
    for name in syncscope:
        if name not in TOOL_TABLES:
            return (f"{path}: unknown table [tool.syncscope.{name}] (syncscope reads "
                    f"{', '.join(f'[tool.syncscope.{t}]' for t in TOOL_TABLES)}){did_you_mean(name, TOOL_TABLES)}")
    return None
