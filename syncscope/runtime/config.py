"""`[tool.syncscope.run]` in the project's pyproject.toml: allow-list entries for the runtime trap.

    [tool.syncscope.run]
    allow = [
      { path = "vllm/v1/worker/*.py", function = "*.warmup*", reason = "warm-up runs once" },
      { path = "serve.py", line = 42, kind = "item", reason = "logging, once per request" },
    ]
"""

from __future__ import annotations

import fnmatch
import os
import tomllib

from syncscope.events import SyncKind
from syncscope.runtime.recorder import AllowRule
from syncscope.suggest import did_you_mean, unknown_tool_table

_FIELDS = ("path", "line", "function", "kind", "reason")
_TABLE_KEYS = ("allow",)
KINDS = tuple(sorted(v for k, v in vars(SyncKind).items() if k.isupper() and isinstance(v, str)))


class ConfigError(ValueError):
    pass


def find_pyproject(start: str) -> str | None:
    directory = os.path.abspath(start)
    while True:
        candidate = os.path.join(directory, "pyproject.toml")
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def load_allow_rules(start: str) -> tuple[AllowRule, ...]:
    path = find_pyproject(start)
    if path is None:
        return ()
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (OSError, ValueError) as exc:  # TOMLDecodeError, and UnicodeDecodeError for bad UTF-8
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    problem = unknown_tool_table(data, path)
    if problem:
        raise ConfigError(problem)
    table = data
    for key in ("tool", "syncscope", "run"):
        table = table.get(key, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.syncscope.run] must be a table")
    for key in table:
        if key not in _TABLE_KEYS:
            raise ConfigError(f"{path}: [tool.syncscope.run]: unknown key {key!r}{did_you_mean(key, _TABLE_KEYS)}")
    entries = table.get("allow", [])
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: [tool.syncscope.run] allow must be a list of tables")
    rules = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: allow entry {i} must be a table with keys among {sorted(_FIELDS)}")
        unknown = [k for k in entry if k not in _FIELDS]
        if unknown:
            raise ConfigError(f"{path}: [tool.syncscope.run] allow entry {i}: unknown key {unknown[0]!r}{did_you_mean(unknown[0], _FIELDS)}")
        # Checked here: a wrong type would otherwise fail inside the program, at its first sync.
        bad = [k for k, v in entry.items() if not (type(v) is int if k == "line" else isinstance(v, str))]
        if bad:
            raise ConfigError(f"{path}: allow entry {i}: line must be an integer, other keys strings (not {bad[0]} = {entry[bad[0]]!r})")
        if "kind" in entry:
            check_kind(entry["kind"], f"{path}: [tool.syncscope.run] allow entry {i}: kind")
        rules.append(AllowRule(**entry))
    return tuple(rules)


def check_kind(kind: str, origin: str) -> None:
    """A kind (or a glob of kinds) that names no kind of sync would allow nothing: an error."""
    if not any(fnmatch.fnmatchcase(k, kind) for k in KINDS):
        raise ConfigError(f"{origin} {kind!r} names no kind of sync{did_you_mean(kind, KINDS)} "
                          f"(kinds: {', '.join(KINDS)})")


def parse_allow_option(text: str) -> AllowRule:
    """`--allow PATH[:LINE][@KIND]` on the command line."""
    spec, _, kind = text.partition("@")
    path, _, line = spec.partition(":")
    if line and not line.isdigit():
        raise ConfigError(f"--allow {text!r}: expected PATH[:LINE][@KIND]")
    if kind:
        check_kind(kind, f"--allow {text}: kind")
    return AllowRule(path=path or "*", line=int(line) if line else None, kind=kind or "*", reason=f"--allow {text}")
