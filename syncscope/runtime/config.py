"""`[tool.syncscope.run]` in the project's pyproject.toml: allow-list entries for the runtime trap.

    [tool.syncscope.run]
    allow = [
      { path = "vllm/v1/worker/*.py", function = "*.warmup*", reason = "warm-up runs once" },
      { path = "serve.py", line = 42, kind = "item", reason = "logging, once per request" },
    ]
"""

from __future__ import annotations

import os
import tomllib

from syncscope.runtime.recorder import AllowRule

_FIELDS = {"path", "line", "function", "kind", "reason"}


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
    table = data
    for key in ("tool", "syncscope", "run"):
        table = table.get(key, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [tool.syncscope.run] must be a table")
    entries = table.get("allow", [])
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: [tool.syncscope.run] allow must be a list of tables")
    rules = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not set(entry) <= _FIELDS:
            raise ConfigError(f"{path}: allow entry {i} must be a table with keys among {sorted(_FIELDS)}")
        # Checked here: a wrong type would otherwise fail inside the program, at its first sync.
        bad = [k for k, v in entry.items() if not (type(v) is int if k == "line" else isinstance(v, str))]
        if bad:
            raise ConfigError(f"{path}: allow entry {i}: line must be an integer, other keys strings (not {bad[0]} = {entry[bad[0]]!r})")
        rules.append(AllowRule(**entry))
    return tuple(rules)


def parse_allow_option(text: str) -> AllowRule:
    """`--allow PATH[:LINE][@KIND]` on the command line."""
    spec, _, kind = text.partition("@")
    path, _, line = spec.partition(":")
    if line and not line.isdigit():
        raise ConfigError(f"--allow {text!r}: expected PATH[:LINE][@KIND]")
    return AllowRule(path=path or "*", line=int(line) if line else None, kind=kind or "*", reason=f"--allow {text}")
