"""Issue 24, names of run-once code (branch w-reach): the default skip-functions pattern for
allocation set-up matches `allocate` as a word of the name (`allocate_kv_cache`,
`_allocate_buffers`), not inside another word: `pop_preallocated` (pop the requests whose
memory was preallocated, every step), `reallocate_drafts` or `release_overallocated` are
ordinary per-step code. VALID: the per-step sync in such a function is reported by default;
INVALID: one in a function named for allocating is still skipped as set-up code."""

from __future__ import annotations

from test_lint_scope import lint_package, where

from syncscope.lint.config import LintConfig

NAMED = """
    import torch

    class Queue:
        def __init__(self, lens: torch.Tensor):
            self.lens = lens.cuda()

        def {name}(self):
            return self.lens.tolist()

    class Scheduler:
        def step(self, queue: Queue):
            return queue.{name}()
"""


def test_allocate_inside_another_word_is_per_step(tmp_path):
    for index, name in enumerate(("pop_preallocated", "reallocate_drafts", "release_overallocated")):
        (tmp_path / str(index)).mkdir()
        found = where(lint_package(tmp_path / str(index), {"queue.py": NAMED.format(name=name)}))
        assert ("pkg/queue.py", 9, "SYN202") in found, (name, found)


def test_a_function_named_for_allocating_stays_cold(tmp_path):
    for index, name in enumerate(("allocate_kv_cache", "_allocate_buffers", "maybe_allocate_workspace")):
        (tmp_path / str(index)).mkdir()
        files = {"queue.py": NAMED.format(name=name)}
        assert where(lint_package(tmp_path / str(index), files)) == [], name


def test_the_default_pattern_matches_words():
    config = LintConfig()
    assert config.cold_function("_allocate_buffers") and config.cold_function("allocate_slots_once")
    assert not config.cold_function("pop_preallocated") and not config.cold_function("deallocate")
