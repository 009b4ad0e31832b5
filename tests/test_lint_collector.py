"""How a lint run handles the cyclic garbage collector (syncscope/lint/collector.py): paused
while the pool's results arrive and then frozen, full collections made rarer during the
whole-program pass, and the process's own settings given back however the run ends (the
linter also runs inside other programs: pytest, the pre-commit hook's head start)."""

from __future__ import annotations

import gc

import pytest

from syncscope.lint import analysis_runs, engine
from syncscope.lint.collector import PASS_FULL_COLLECTION_EVERY, fewer_full_collections, paused_then_frozen
from syncscope.lint.engine import lint_paths
from syncscope.lint.files import module_name

from lint_helpers import helper_and_step_package, make_config


@pytest.fixture(autouse=True)
def _collector_as_found():
    """Each test starts with the collector on and nothing frozen, and leaves it so."""
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    gc.enable()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    (gc.enable if enabled else gc.disable)()


def _tasks(root) -> list[tuple]:
    """The engine's tasks for every file of `root` (analysis_runs.py's tuple)."""
    tasks = []
    for path in sorted(root.iterdir()):
        module, is_package = module_name(str(path))
        tasks.append((str(path), path.name, module, is_package, "digest", (0, 0), False, frozenset()))
    return tasks


def test_results_arrive_with_the_collector_paused_and_are_frozen_after(tmp_path):
    root = helper_and_step_package(tmp_path)
    config = make_config(tmp_path)
    while_arriving = []
    frozen_before = gc.get_freeze_count()
    for _, result in analysis_runs.analyze_all(_tasks(root), config, 2, None):
        while_arriving.append(gc.isenabled())
        assert result.functions is not None
    assert while_arriving == [False, False, False]
    assert gc.isenabled()
    assert gc.get_freeze_count() > frozen_before  # the results, never scanned again


def test_a_run_stopped_while_results_arrive_turns_the_collector_back_on(tmp_path):
    root = helper_and_step_package(tmp_path)
    arrivals = analysis_runs.analyze_all(_tasks(root), make_config(tmp_path), 2, None)
    next(arrivals)
    assert not gc.isenabled()
    arrivals.close()  # what an exception in the engine's loop does to the generator
    assert gc.isenabled()


def test_a_collector_the_program_had_off_stays_off(tmp_path):
    gc.disable()
    with paused_then_frozen():
        pass
    assert not gc.isenabled()
    with fewer_full_collections():
        pass
    assert not gc.isenabled()


def test_the_pass_runs_with_rarer_full_collections_and_gives_the_thresholds_back(tmp_path, monkeypatch):
    root = helper_and_step_package(tmp_path)
    gc.set_threshold(500, 7, 9)  # the program's own, not CPython's defaults
    seen = []
    solve = engine._solve_or_reuse

    def recording(*args, **kwargs):
        seen.append(gc.get_threshold())
        return solve(*args, **kwargs)

    monkeypatch.setattr(engine, "_solve_or_reuse", recording)
    found = lint_paths([str(root)], make_config(tmp_path), use_cache=False, jobs=2)
    assert sorted(f.code for f in found.findings) == ["SYN201", "SYN203", "SYN601"]
    assert seen == [(500, 7, PASS_FULL_COLLECTION_EVERY)]
    assert gc.get_threshold() == (500, 7, 9)
    assert gc.isenabled()


def test_thresholds_come_back_when_the_pass_raises():
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError):
        with fewer_full_collections():
            raise RuntimeError("the pass failed")
    assert gc.get_threshold() == (700, 10, 10)
