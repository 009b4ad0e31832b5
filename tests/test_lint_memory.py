"""What keeps a whole-tree lint's memory down (docs/lint.md, "2026-11-27 (session 3): lint
memory"): the workers' results interned, the facts pickled only when the cache is written and
let go before the whole-program pass, workers that collect their cyclic garbage."""

from __future__ import annotations

import copy
import gc
import pickle

from syncscope.lint import pool_worker
from syncscope.lint.cache import FACT_FIELDS, Cache
from syncscope.lint.engine import lint_paths
from syncscope.lint.interning import Interner
from syncscope.lint.records import CallRecord, ChainStep, FileFinding
from syncscope.lint.worker import RawResult

from lint_helpers import helper_and_step_package, make_config


def _result(module: str) -> RawResult:
    """A result as it arrives from a worker: its own copies of every name and number."""
    call = CallRecord(1000, 5, 1000, 1001, ("func", module + ".helper"), ((0, None, ("host", None)),), "helper")
    shared = [call]
    return pickle.loads(pickle.dumps(RawResult(
        findings=[FileFinding("SYN201", 1000, 5, 1000, 1000, "step", "a sync", None, "error",
                              chain=(ChainStep("a.py", 1000, module + ".step", "calls `helper`"),))],
        module=module,
        functions={module + ".step": {"line": 1000, "params": ["x"], "calls": shared, "hot": True},
                   module + ".other": {"line": 1, "params": ["x"], "calls": shared, "hot": False}},
        const_literals={(1000, 5): frozenset({"x", 1000})},
        owner_fields={"Batch": {"ids": {1, 1.0}}},
        straight={"f": [(1000, 1002)]},
    )))


def test_interning_keeps_every_value_equal_and_shares_equal_names_across_files():
    interner = Interner()
    first, second = _result("pkg.mod"), _result("pkg.mod")
    expected = copy.deepcopy(first)
    assert first.module is not second.module  # two pickles: two copies of each name
    interner.result(first)
    interner.result(second)
    assert first == expected == second
    assert first.module is second.module
    assert next(iter(first.functions)) is next(iter(second.functions))
    assert first.findings[0].line is second.findings[0].line  # 1000: not one of CPython's small ints
    assert first.const_literals[(1000, 5)] is second.const_literals[(1000, 5)]


def test_interning_keeps_record_types_and_never_mixes_equal_values_of_other_types():
    interner = Interner()
    result = interner.result(_result("pkg.mod"))
    assert type(result.findings[0]) is FileFinding and type(result.findings[0].chain[0]) is ChainStep
    call = result.functions["pkg.mod.step"]["calls"][0]
    assert type(call) is CallRecord and call.target == ("func", "pkg.mod.helper")
    interner.value(True, {})
    interner.value(1.0, {})
    assert type(interner.value(1, {})) is int and type(interner.value(1000.0, {})) is float
    assert [type(x) for x in interner.value((True, 1, 1.0), {})] == [bool, int, float]


def test_interning_keeps_a_container_held_twice_one_object():
    """A worker's result may hold one list in two places; a rebuilt copy per place would
    take more memory than before, and a change through one would no longer show in the other."""
    result = Interner().result(_result("pkg.mod"))
    step, other = result.functions["pkg.mod.step"], result.functions["pkg.mod.other"]
    assert step["calls"] is other["calls"]


def test_facts_are_pickled_when_the_cache_is_written_and_read_back_equal(tmp_path):
    cache = Cache(str(tmp_path), ".cache", "key")
    result = _result("pkg.mod")
    cache.put("pkg/mod.py", "digest", result, (1, 2))
    # before the write the table holds the result, not bytes; the facts read the same
    entry = cache.with_facts("pkg/mod.py", cache.get("pkg/mod.py", "digest"))
    assert all(getattr(entry, name) == getattr(result, name) for name in FACT_FIELDS)
    cache.flush_facts()
    assert cache._facts == {}  # let go before the whole-program pass
    assert not cache.facts_dirty
    cache.save()
    again = Cache(str(tmp_path), ".cache", "key")
    loaded = again.with_facts("pkg/mod.py", again.get("pkg/mod.py", "digest"))
    assert loaded is not None and loaded.has_facts
    assert all(getattr(loaded, name) == getattr(result, name) for name in FACT_FIELDS)
    # and after the flush the first cache still serves them, from the file
    assert cache.with_facts("pkg/mod.py", cache.get("pkg/mod.py", "digest")).functions == result.functions


def test_a_cold_run_with_two_workers_gives_what_one_process_gives(tmp_path):
    """The pool path (interned results, facts written before the pass) and the in-process one
    agree, and a rerun whose pass has to run again from the facts file does too."""
    root = helper_and_step_package(tmp_path)
    config = make_config(tmp_path)

    def findings(**kw):
        return [(f.path, f.line, f.code, f.message, f.chain) for f in lint_paths([str(root)], config, **kw).findings]

    alone = findings(use_cache=False, jobs=1)
    assert sorted(code for _, _, code, _, _ in alone) == ["SYN201", "SYN203", "SYN601"]
    assert findings(jobs=2) == alone  # cold, through the pool, writes the cache
    for name in (tmp_path / ".syncscope_cache").iterdir():
        if "-solved-" in name.name:
            name.unlink()  # the pass runs again, on facts read from the facts file
    assert findings(jobs=2) == alone


def test_a_worker_collects_its_cyclic_garbage_every_few_files(tmp_path, monkeypatch):
    path = tmp_path / "m.py"
    path.write_text("import torch\ndef f(x: torch.Tensor):\n    return x.item()\n")
    collected = []
    monkeypatch.setattr(gc, "collect", lambda *a: collected.append(1) or 0)
    monkeypatch.setattr(pool_worker, "_analyzed", 0)
    config = make_config(tmp_path)
    for _ in range(pool_worker.COLLECT_EVERY * 2 + 1):
        result = pool_worker.analyze_in_worker(str(path), "m", False, config)
    assert [f.code for f in result.findings] == ["SYN201"]
    assert len(collected) == 2
