"""Facts about library APIs and engine conventions (`library_facts.toml`), extendable by a
project's own file (`library-facts` in the configuration): which conditions are false on a CUDA
GPU or while serving, which functions run every step, which method names never dispatch into
the tree. One place, read by the per-file walk (branches.py) and the whole-program pass
(reachability.py)."""

from __future__ import annotations

import functools
import os
import re
import tomllib
from dataclasses import dataclass

from syncscope.with_blocks import ACCEPTING_MANAGERS

_BUILTIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "library_facts.toml")
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")


def words(name: str) -> list[str]:
    """`current_platform.is_rocm` -> ["current", "platform", "is", "rocm"]."""
    return [w for w in _WORD_SPLIT.split(name.lower()) if w]


@dataclass(frozen=True)
class LibraryFacts:
    other_words: frozenset
    cuda_words: frozenset
    predicate_prefixes: frozenset
    other_path_words: frozenset
    other_dirs: frozenset
    tool_path_words: frozenset
    tool_dirs: frozenset
    rare_event_words: frozenset
    rare_event_not: frozenset
    rare_event_probes: frozenset
    rare_event_compaction: frozenset
    debug_words: frozenset
    env_check_words: frozenset
    env_check_not: frozenset
    capture_states: frozenset
    graph_captures: frozenset
    accepted_sync_blocks: frozenset
    env_readers: frozenset
    env_declarations: frozenset
    false_while_serving: frozenset
    true_on_cuda: frozenset
    available_on_cuda: frozenset
    other_packages: frozenset
    capability_tests: frozenset
    hot_roots: tuple
    module_methods: tuple
    not_module_bases: tuple
    module_types: tuple
    step_stages: tuple
    request_modules: tuple
    input_processors: tuple
    request_intake: tuple
    request_release: tuple
    foreign_exports: tuple
    no_dispatch: frozenset
    host_functions: tuple
    field_setters: frozenset

    def has_word(self, name: str, vocabulary: frozenset) -> bool:
        """A word of `name` is in the vocabulary (entries with `_` match as a run of words)."""
        split = words(name)
        if any(w in vocabulary for w in split):
            return True
        joined = "_" + "_".join(split) + "_"
        return any("_" in entry and f"_{entry}_" in joined for entry in vocabulary)

    def rare_event(self, name: str) -> str | None:
        """The rare event a test's name says happened (`preempted_req_ids`, `rebalanced`,
        `try_recover_ranks`), or None; not a switch or capability (`enable_priority_preemption`)."""
        if not _mentions(self.rare_event_words).search(name.lower()):  # most names: one search
            return None
        if not self.has_word(name, self.rare_event_words) or self.has_word(name, self.rare_event_not):
            return None
        return _event_word(name, self.rare_event_words)

    def rare_event_function(self, name: str) -> str | None:
        """The rare event a function is named for (`handle_preemptions`, `retract_decode`), or None:
        not one that asks whether it happened (`maybe_rebalance_after_rank_fault`) nor a switch."""
        split = words(name)
        if not split or split[0] in self.rare_event_probes:
            return None
        return self.rare_event(name)

    def env_check(self, variable: str) -> bool:
        """An environment variable that turns on a check left off by default (`..._NANS_IN_LOGITS`,
        `..._DEBUG_BOUNDS`), not one that turns a check off (`VLLM_SKIP_P2P_CHECK`)."""
        return self.has_word(variable, self.env_check_words) and not self.has_word(variable, self.env_check_not)


@functools.lru_cache(maxsize=8)
def _mentions(vocabulary: frozenset) -> re.Pattern:
    """A pattern that finds the longest word of any entry of the vocabulary inside a lower-cased
    name (a word of it or not): a cheap test before splitting the name into words, which finds
    every name that `has_word` would (`is_scaling` looks for `scaling`)."""
    longest = sorted({max(words(entry), key=len) for entry in vocabulary if words(entry)})
    return re.compile("|".join(re.escape(word) for word in longest) or "(?!)")


def _event_word(name: str, vocabulary: frozenset) -> str:
    split = words(name)
    joined = "_" + "_".join(split) + "_"
    return next((w for w in split if w in vocabulary), None) or \
        next(e for e in sorted(vocabulary) if "_" in e and f"_{e}_" in joined)


class LibraryFactsError(Exception):
    pass


def _read(path: str) -> dict:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as error:
        raise LibraryFactsError(f"cannot read library facts {path}: {error.strerror}") from None
    except tomllib.TOMLDecodeError as error:
        raise LibraryFactsError(f"invalid library facts {path}: {error}") from None


_KEYS = {
    ("platform", "other-words"): "other_words",
    ("platform", "cuda-words"): "cuda_words",
    ("platform", "predicate-prefixes"): "predicate_prefixes",
    ("platform", "other-path-words"): "other_path_words",
    ("platform", "other-dirs"): "other_dirs",
    ("platform", "true-on-cuda"): "true_on_cuda",
    ("platform", "available-on-cuda"): "available_on_cuda",
    ("platform", "other-packages"): "other_packages",
    ("platform", "capability-tests"): "capability_tests",
    ("switches", "debug-words"): "debug_words",
    ("switches", "tool-path-words"): "tool_path_words",
    ("switches", "tool-dirs"): "tool_dirs",
    ("switches", "rare-event-words"): "rare_event_words",
    ("switches", "rare-event-not"): "rare_event_not",
    ("switches", "rare-event-probes"): "rare_event_probes",
    ("switches", "rare-event-compaction"): "rare_event_compaction",
    ("switches", "env-readers"): "env_readers",
    ("switches", "env-declarations"): "env_declarations",
    ("switches", "env-check-words"): "env_check_words",
    ("switches", "env-check-not"): "env_check_not",
    ("switches", "capture-states"): "capture_states",
    ("switches", "graph-captures"): "graph_captures",
    ("switches", "accepted-sync-blocks"): "accepted_sync_blocks",
    ("switches", "false-while-serving"): "false_while_serving",
    ("roots", "hot"): "hot_roots",
    ("roots", "module-methods"): "module_methods",
    ("roots", "not-module-bases"): "not_module_bases",
    ("roots", "module-types"): "module_types",
    ("roots", "step-stages"): "step_stages",
    ("roots", "request-modules"): "request_modules",
    ("roots", "input-processors"): "input_processors",
    ("roots", "request-intake"): "request_intake",
    ("roots", "request-release"): "request_release",
    ("roots", "foreign-exports"): "foreign_exports",
    ("roots", "no-dispatch"): "no_dispatch",
    ("host", "functions"): "host_functions",
    ("fields", "setters"): "field_setters",
}

_LOADED: dict[tuple, LibraryFacts] = {}


def load(extra_file: str | None = None, extra_roots: tuple = ()) -> LibraryFacts:
    """The built-in facts, with a project's file and configured `hot-roots` added."""
    key = (extra_file, tuple(extra_roots))
    found = _LOADED.get(key)
    if found is not None:
        return found
    merged: dict[str, list] = {field: [] for field in _KEYS.values()}
    for path in [_BUILTIN] + ([extra_file] if extra_file else []):
        data = _read(path)
        for (table, name), field in _KEYS.items():
            value = data.get(table, {}).get(name, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise LibraryFactsError(f"{path}: [{table}] {name} must be a list of strings")
            merged[field].extend(value)
        unknown = {f"[{t}] {k}" for t in data for k in (data[t] if isinstance(data[t], dict) else {})
                   if (t, k) not in _KEYS}
        if unknown:
            raise LibraryFactsError(f"{path}: unknown keys: {', '.join(sorted(unknown))}")
    merged["hot_roots"].extend(extra_roots)
    merged["accepted_sync_blocks"].extend(ACCEPTING_MANAGERS)  # shared with the runtime trap
    ordered = ("hot_roots", "module_methods", "not_module_bases", "module_types", "step_stages", "request_modules",
               "input_processors", "request_intake", "request_release", "foreign_exports",
               "host_functions")
    facts = LibraryFacts(**{k: (tuple(v) if k in ordered else frozenset(v)) for k, v in merged.items()})
    _LOADED[key] = facts
    return facts
