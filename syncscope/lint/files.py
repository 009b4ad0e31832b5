"""Which files to lint, what module each one is, and whether it can contain a finding at all."""

from __future__ import annotations

import os
import re

from ..site import relative_path

# Text that every rule needs to see somewhere in a file before it can fire. A file without any
# of it is not parsed (TorchFix does the same with the single word "torch").
_TRIGGERS = [
    r"torch", r"Tensor", r"\.item\(", r"\.tolist\(", r"\.cpu\(", r"\.cuda\(", r"\.numpy\(",
    r"\.to\(", r"synchroni[sz]e", r"new_tensor", r"repeat_interleave", r"nonzero", r"copy_\(",
]
# Inside such a file, a function is parsed only if its text mentions one of these (a number
# stored at an index: SYN404, SYN406; a name stored at an index, which may be a parameter that
# callers pass a number for: `buf[idx] = value`, 3% more functions of SGLang).
_FUNCTION_TRIGGERS = _TRIGGERS + [r"mask", r"gpu", r"\]\s*=\s*-?(\d|True\b|False\b|float\()",
                                  r"(?m:\]\s*=\s*[A-Za-z_]\w*\s*$)"]


def _trigger_words(config, base: list[str]) -> str:
    """`base` plus the last part of every configured syncing property and function."""
    extra = [p.rsplit(".", 1)[-1] for p in config.syncing_properties + config.syncing_functions]
    return "|".join(base + [re.escape(w) for w in extra if w and "*" not in w])


def trigger_pattern(config) -> re.Pattern[bytes]:
    return re.compile(_trigger_words(config, _TRIGGERS).encode())


def discover(paths: list[str], config) -> list[tuple[str, str]]:
    """(absolute path, path relative to the project root) of every Python file to lint, sorted.
    Files named explicitly are always linted; directories are walked, skipping excluded ones."""
    found: dict[str, str] = {}
    for given in paths:
        absolute = os.path.abspath(given)
        if os.path.isfile(absolute):
            found[absolute] = relative_path(absolute, config.root)
            continue
        if not os.path.isdir(absolute):
            raise FileNotFoundError(given)
        if config.excluded(relative_path(absolute, config.root)) and relative_path(absolute, config.root) != ".":
            continue
        for directory, subdirs, files in os.walk(absolute):
            rel_dir = relative_path(directory, config.root)
            prefix = "" if rel_dir == "." else rel_dir + "/"
            subdirs[:] = sorted(d for d in subdirs if not config.excluded_name(d, prefix + d))
            for name in files:
                if name.endswith(".py") and not config.excluded_name(name, prefix + name):
                    found[os.path.join(directory, name)] = prefix + name
    return sorted(found.items(), key=lambda item: item[1])


def module_name(path: str) -> tuple[str, bool]:
    """(`pkg.sub.mod`, is_package) for a file, as an import would name it: through the packages
    above it, namespace directories (PEP 420: no `__init__.py`) included. SGLang 0.5.23 ships
    `sglang/srt/` without `__init__.py`: `sglang/srt/managers/scheduler.py` is
    `sglang.srt.managers.scheduler`, as its importers write it. Named from below the namespace
    directory instead (`scheduler`), 280 of its files shared 121 names (three `scheduler`s,
    three `linear`s), and the program kept only the first file of each name. A file with no
    package anywhere above it is named from its own directory (a script's sibling import)."""
    directory, filename = os.path.split(os.path.abspath(path))
    stem = filename[:-3] if filename.endswith(".py") else filename
    is_package = stem == "__init__"
    parts = [] if is_package else [stem]
    top = None
    walked: list[str] = []
    for _ in range(_MAX_NAMESPACE_DEPTH):
        parent, name = os.path.split(directory)
        if not name:
            break
        walked.append(name)
        if os.path.isfile(os.path.join(directory, "__init__.py")):
            top = len(walked)
        directory = parent
    if top is None:  # no package above (an `__init__.py` makes its own directory one)
        return stem, False
    return ".".join(list(reversed(walked[:top])) + parts), is_package


# how far up `module_name` looks for a package above a namespace directory
_MAX_NAMESPACE_DEPTH = 12


def function_trigger(config) -> re.Pattern[str]:
    """The same idea one level down: a hot function whose text mentions none of these cannot
    produce a finding of the per-function rules, so it is not parsed. (A call into a syncing
    helper from such a function is missed by SYN601; docs/lint.md says so.)"""
    return re.compile(_trigger_words(config, _FUNCTION_TRIGGERS))
