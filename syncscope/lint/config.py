"""`[tool.syncscope.lint]` in pyproject.toml, merged with command-line options.

Keys (all optional; kebab-case as in Ruff):
    select, extend-select, ignore     rule codes or prefixes ("SYN2", "SYN101")
    per-file-ignores                  {"tests/*" = ["SYN2"], ...}
    exclude, extend-exclude           globs of paths not to lint (directories or files)
    host-only-paths                   globs of files that only run on the CPU (a CPU backend):
                                      there is no device to wait for, so they are not linted
    skip-functions, extend-skip-functions
                                      globs of function names that run once (not linted)
    skip-classes                      globs of class names whose methods run on the host only
    all-functions                     lint every function and module/class body too
    host-suffixes, device-suffixes    naming conventions for where a value lives
    twin-suffixes                     what `--fix` looks for as a host copy of a device value
    syncing-properties                `Type.attr` / `name.attr` reads that sync (SYN301)
    syncing-functions                 qualified names / `Type.method` calls that sync (SYN302)
    upper-bounds                      {syncing property = host upper bound}: what `--fix` reads instead
    cross-file                        the one-level helper rule (SYN601), default true
    cache-dir                         default ".syncscope_cache" in the project root
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
from dataclasses import dataclass, field, fields

from syncscope.suggest import did_you_mean, unknown_tool_table

from .catalog import CATALOG, DIAGNOSTICS
from .provenance import NameHints

DEFAULT_SKIP_FUNCTIONS = [
    "__init__", "__post_init__", "__new__", "__del__", "__repr__", "__str__", "extra_repr",
    "load_weights", "load_model", "*warmup*", "*warm_up*", "*warming_up*", "warm_*", "_warm_*", "*capture*", "profile_run", "_dummy_run",
    "_dummy_sampler_run", "init_*", "_init_*", "initialize_*", "_initialize_*", "setup_*", "_setup_*",
    "determine_available_memory", "reset_*", "shutdown", "test_*", "load_*", "save_*", "sleep",
    "wake_up", "*checkpoint*", "*ensure_*cache*", "*profil*", "*compile*", "allocate*", "*_allocate*", "*teardown*",
    "*cleanup*", "*dummy*", "*reference*", "ref_*", "*register*",
]
DEFAULT_HOST_SUFFIXES = ["_cpu", "_np", "_host", "_list", "_numpy", "_pinned"]  # pinned memory is host memory
DEFAULT_DEVICE_SUFFIXES = ["_gpu", "_cuda"]
DEFAULT_TWIN_SUFFIXES = ["_cpu", "_np"]
DEFAULT_SYNCING_PROPERTIES = [
    # vLLM's lazy host copies of device fields (seed PR 40654)
    "CommonAttentionMetadata.seq_lens_cpu",
    "CommonAttentionMetadata.num_computed_tokens_cpu",
    "common_attn_metadata.seq_lens_cpu",
    "common_attn_metadata.num_computed_tokens_cpu",
]
# a syncing property -> the host upper bound its class offers (seed PR 40654)
DEFAULT_UPPER_BOUNDS = {"seq_lens_cpu": ["seq_lens_cpu_upper_bound"]}
DEFAULT_HOST_ONLY_PATHS = ["cpu.py", "cpu_*.py", "*_cpu.py", "*_cpu_*.py", "amx_*.py"]
DEFAULT_EXCLUDE = [
    ".git", ".hg", ".svn", ".venv", "venv", "__pycache__", ".tox", ".nox", ".eggs", "build", "dist",
    "node_modules", ".syncscope_cache", ".mypy_cache", ".pytest_cache", "site-packages",
    # tests are not the serving hot path (name a test file explicitly to lint it anyway)
    "tests", "test", "testing.py", "test_*.py", "*_test.py", "conftest.py",
]
# Classes whose methods run on the host only, before any GPU work: input processors of
# multimodal models (Hugging Face style) and their helpers.
DEFAULT_SKIP_CLASSES = ["*Processor", "*ProcessingInfo", "*DummyInputsBuilder"]
# Processors that run on every step, so `*Processor` must not skip them: logits processors,
# logprob processors and the schedulers' batch-result processors (SGLang's
# `SchedulerBatchResultProcessor`), attention processors of diffusion models.
PER_STEP_CLASSES = ["*Logit*Processor", "*Logprob*Processor", "*ResultProcessor", "*AttnProcessor",
                    "*AttentionProcessor"]
_PER_STEP = re.compile("|".join(fnmatch.translate(p) for p in PER_STEP_CLASSES))
# SGLang's attention backends build each batch's metadata in `init_forward_metadata*` and their
# `_init_*_metadata` helpers (also on every CUDA-graph replay): per step, although `init_*` reads
# as set-up. Graph capture stays once.
PER_STEP_FUNCTIONS = ["init_*metadata*", "_init_*metadata*"]
_PER_STEP_FUNCTION = re.compile("|".join(fnmatch.translate(p) for p in PER_STEP_FUNCTIONS))


class ConfigError(Exception):
    """Bad configuration: exit code 2."""


@dataclass
class LintConfig:
    select: list[str] = field(default_factory=lambda: ["SYN"])
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    extend_exclude: list[str] = field(default_factory=list)
    host_only_paths: list[str] = field(default_factory=lambda: list(DEFAULT_HOST_ONLY_PATHS))
    skip_functions: list[str] = field(default_factory=lambda: list(DEFAULT_SKIP_FUNCTIONS))
    extend_skip_functions: list[str] = field(default_factory=list)
    skip_classes: list[str] = field(default_factory=lambda: list(DEFAULT_SKIP_CLASSES))
    all_functions: bool = False
    host_suffixes: list[str] = field(default_factory=lambda: list(DEFAULT_HOST_SUFFIXES))
    device_suffixes: list[str] = field(default_factory=lambda: list(DEFAULT_DEVICE_SUFFIXES))
    twin_suffixes: list[str] = field(default_factory=lambda: list(DEFAULT_TWIN_SUFFIXES))
    syncing_properties: list[str] = field(default_factory=lambda: list(DEFAULT_SYNCING_PROPERTIES))
    syncing_functions: list[str] = field(default_factory=list)
    upper_bounds: dict[str, list[str]] = field(default_factory=lambda: dict(DEFAULT_UPPER_BOUNDS))
    cross_file: bool = True
    cache_dir: str = ".syncscope_cache"
    # the per-step scope (reachability.py): more functions that run every step, a project's
    # own library facts file (library.py), and whether syncs in cold code are reported too
    hot_roots: list[str] = field(default_factory=list)
    library_facts: str = ""
    include_cold: bool = False
    root: str = field(default=".", metadata={"derived": True})

    def __post_init__(self) -> None:
        self._finish()

    def _finish(self) -> None:
        patterns = self.skip_functions + self.extend_skip_functions
        self._cold = re.compile("|".join(fnmatch.translate(p) for p in patterns)) if patterns else None
        self._cold_classes = (re.compile("|".join(fnmatch.translate(p) for p in self.skip_classes))
                              if self.skip_classes else None)
        self.name_hints = NameHints(self.host_suffixes, self.device_suffixes)

    def library(self):
        """The library facts (built-in, plus the project's file), loaded once."""
        from .library import load

        path = self.library_facts
        if path and not os.path.isabs(path):
            path = os.path.join(self.root, path)
        return load(path or None, tuple(self.hot_roots))

    def cold_function(self, name: str) -> bool:
        if not (self._cold and self._cold.match(name)):
            return False
        return not _PER_STEP_FUNCTION.match(name) or "capture" in name

    def cold_class(self, name: str) -> bool:
        return bool(self._cold_classes and self._cold_classes.match(name) and not _PER_STEP.match(name))

    # -- which codes apply where ---------------------------------------------------------
    def enabled(self, code: str, path: str | None = None) -> bool:
        selected = _longest_match(code, self.select + self.extend_select)
        ignored = _longest_match(code, self.ignore)
        if selected < 0 or ignored > selected or (ignored >= 0 and ignored == selected):
            return False
        if path is not None:
            for pattern, codes in self.per_file_ignores.items():
                if _path_matches(path, pattern) and _longest_match(code, codes) >= 0:
                    return False
        return True

    def excluded(self, path: str) -> bool:
        return any(_path_matches(path, p) for p in self.exclude + self.extend_exclude)

    def excluded_name(self, name: str, rel: str) -> bool:
        """Cheap check while walking: the new path component `name` (its parents were already
        checked) against plain-name patterns, the full path only against patterns with a `/`."""
        plain, globs, with_slash = self._exclude_patterns()
        if name in plain:
            return True
        if any(_path_matches(rel, pattern) for pattern in with_slash):
            return True
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in globs)

    def _exclude_patterns(self) -> tuple[frozenset, tuple, tuple]:
        """The exclude patterns sorted by how they match, computed once per configuration (the
        walk asks for every file and directory of the tree)."""
        patterns = tuple(self.exclude + self.extend_exclude)
        cached = self.__dict__.get("_exclude_split")
        if cached is None or cached[0] != patterns:
            globs = tuple(p for p in patterns if "/" not in p and any(ch in p for ch in "*?["))
            with_slash = tuple(p for p in patterns if "/" in p)
            cached = (patterns, (frozenset(patterns), globs, with_slash))
            self.__dict__["_exclude_split"] = cached
        return cached[1]

    def host_only(self, path: str) -> bool:
        name = path.replace(os.sep, "/").rsplit("/", 1)[-1]
        return any(fnmatch.fnmatchcase(name, p) if "/" not in p else _path_matches(path, p)
                   for p in self.host_only_paths)

    def analysis_key(self) -> str:
        """What the per-file analysis depends on (the cache key). Selection and ignores are
        applied afterwards, so changing them reuses the cache."""
        keys = ("skip_functions", "extend_skip_functions", "skip_classes", "all_functions", "host_suffixes",
                "device_suffixes", "twin_suffixes", "syncing_properties", "syncing_functions", "cross_file", "upper_bounds",
                "hot_roots", "library_facts")
        data = {k: getattr(self, k) for k in keys}
        data["library_facts"] = _file_digest(self.library_facts, self.root)
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


CODES = tuple(sorted(CATALOG)) + tuple(sorted(DIAGNOSTICS))
_SELECTORS = ("select", "extend_select", "ignore")


def unknown_code(selector: str) -> str | None:
    """None when `selector` names at least one code (a code, a prefix of codes, or ALL); else
    the error's end: what it is, and the nearest code."""
    selector = selector.strip().upper()
    if selector == "ALL" or any(code.startswith(selector) for code in CODES):
        return None
    return f"{selector!r} names no rule{did_you_mean(selector, CODES)}"


def check_selectors(name: str, value, origin: str) -> None:
    """A selector that names nothing would switch a rule off (or select nothing) silently: an
    error naming where it came from (`--select`, or `file: [tool.syncscope.lint] key`)."""
    if name == "select" and not value:
        raise ConfigError(f"{origin}: empty: it selects no rule (the linter would check nothing)")
    if name in _SELECTORS:
        items = [(origin, v) for v in value]
    elif name == "per_file_ignores":
        items = [(f"{origin} {pattern!r}", v) for pattern, codes in value.items() for v in codes]
    else:
        return
    for where, selector in items:
        problem = unknown_code(selector)
        if problem:
            raise ConfigError(f"{where}: {problem}")


def _file_digest(path: str, root: str) -> str:
    """A file's content hash ("" for none): editing the library facts invalidates the cache."""
    if not path:
        return ""
    try:
        with open(path if os.path.isabs(path) else os.path.join(root, path), "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()[:16]
    except OSError:
        return "missing"


def _longest_match(code: str, prefixes: list[str]) -> int:
    """Length of the longest prefix matching `code` (Ruff's rule: the more specific wins); -1 if none."""
    best = -1
    for prefix in prefixes:
        prefix = prefix.strip().upper()
        if prefix == "ALL":
            prefix = ""
        if code.startswith(prefix):
            best = max(best, len(prefix))
    return best


def _path_matches(path: str, pattern: str) -> bool:
    """Glob match on the relative path or on any of its components (`build` excludes every
    `build/` directory, `tests/*` the files under tests)."""
    path = path.replace(os.sep, "/")
    if fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, pattern.rstrip("/") + "/*"):
        return True
    if "/" not in pattern:
        return any(fnmatch.fnmatchcase(part, pattern) for part in path.split("/"))
    return False


def find_project_root(start: str) -> str:
    """The nearest directory at or above `start` holding a pyproject.toml; the current
    directory otherwise (so paths in reports stay relative to where the command ran)."""
    current = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    while True:
        if os.path.isfile(os.path.join(current, "pyproject.toml")):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return os.getcwd()
        current = parent


def load_config(root: str, config_file: str | None = None, overrides: dict | None = None) -> LintConfig:
    """Read `[tool.syncscope.lint]` from `config_file` or `<root>/pyproject.toml`, then apply
    command-line overrides (keys as dataclass field names; None means not given)."""
    path = config_file or os.path.join(root, "pyproject.toml")
    table: dict = {}
    if os.path.isfile(path):
        import tomllib  # only when there is a file to read

        try:
            with open(path, "rb") as handle:
                data = tomllib.load(handle)
        except (OSError, ValueError) as error:
            raise ConfigError(f"{path}: {error}") from error
        problem = unknown_tool_table(data, path)
        if problem:
            raise ConfigError(problem)
        table = _table(data, ("tool", "syncscope", "lint"), path)
        if config_file and not table:
            table = _table(data, ("lint",), path)  # a standalone file may use a plain [lint] table
    elif config_file:
        raise ConfigError(f"config file not found: {config_file}")
    known = {f.name for f in fields(LintConfig)} - {"root"}
    values: dict = {}
    for key, value in table.items():
        name = key.replace("-", "_")
        if name not in known:
            keys = sorted(k.replace("_", "-") for k in known)
            raise ConfigError(f"{path}: unknown key {key!r} in [tool.syncscope.lint]{did_you_mean(key, keys)}")
        values[name] = _check_type(name, value)
        check_selectors(name, values[name], f"{path}: [tool.syncscope.lint] {key}")
    for key, value in (overrides or {}).items():
        if value is not None:
            check_selectors(key, value, "--" + key.replace("_", "-"))
            values[key] = value
    config = LintConfig(**values)
    config.root = root
    return config


def _table(data: dict, keys: tuple[str, ...], path: str) -> dict:
    """`data[keys[0]][keys[1]]...`, {} where absent; a key holding something other than a table
    (`tool = "x"`, `[[tool.syncscope]]`) is a configuration error, not a traceback."""
    table = data
    for depth, key in enumerate(keys):
        table = table.get(key, {})
        if not isinstance(table, dict):
            found = "an array of tables" if isinstance(table, list) and table and all(isinstance(t, dict) for t in table) else _toml_type(table)
            raise ConfigError(f"{path}: [{'.'.join(keys[: depth + 1])}] must be a table, not {found}")
    return table


def _toml_type(value) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return f"a {type(value).__name__}"  # dates and times


def _check_type(name: str, value):
    default = getattr(LintConfig(), name)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ConfigError(f"[tool.syncscope.lint] {name.replace('_', '-')} must be true or false")
    elif isinstance(default, list):
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"[tool.syncscope.lint] {name.replace('_', '-')} must be a list of strings")
    elif isinstance(default, dict):
        if not isinstance(value, dict):
            raise ConfigError(f"[tool.syncscope.lint] {name.replace('_', '-')} must be a table")
        value = {k: ([v] if isinstance(v, str) else v) for k, v in value.items()}
        bad = [k for k, v in value.items() if not isinstance(v, list) or not all(isinstance(c, str) for c in v)]
        if bad:
            raise ConfigError(f"[tool.syncscope.lint] {name.replace('_', '-')}: {bad[0]!r} must be a list of strings, not {_toml_type(value[bad[0]])}")
    elif isinstance(default, str) and not isinstance(value, str):
        raise ConfigError(f"[tool.syncscope.lint] {name.replace('_', '-')} must be a string")
    return value
