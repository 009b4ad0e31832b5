"""A model inheriting another module's host-only fields is walked once on a cold run
(engine._inheriting_ahead, field_configs.configs_ahead): its fields are read ahead of the
analysis. The findings, and what the cache keeps, are those the second walk gave before."""

from __future__ import annotations

import textwrap

from test_lint_field_configs import SUBCLASS, base, model
from lint_helpers import make_config
from test_lint_host_facts import INPUTS, where

from syncscope.lint import analysis_runs, engine
from syncscope.lint.engine import lint_paths
from syncscope.lint.field_configs import configs_ahead
from syncscope.lint.worker import analyze_file


def _package(tmp_path, keep_on_cpu: bool = True):
    root = tmp_path / "pkg"
    root.mkdir(exist_ok=True)
    (root / "__init__.py").write_text("")
    for name, source in {"inputs.py": INPUTS, "omni.py": base(keep_on_cpu), "model.py": model(SUBCLASS)}.items():
        (root / name).write_text(textwrap.dedent(source))
    return root


def _counting(monkeypatch) -> list:
    walked = []

    def counted(path, module, is_package, config, facts_only=False, inherited=frozenset()):
        walked.append((module, inherited))
        return analyze_file(path, module, is_package, config, facts_only, inherited)

    monkeypatch.setattr(engine, "analyze_file", counted)  # a cached root's facts walked again
    monkeypatch.setattr(analysis_runs, "analyze_file", counted)  # the run's in-process walks
    return walked


def test_an_inheriting_model_is_walked_once_with_its_fields(tmp_path, monkeypatch):
    root = _package(tmp_path)
    walked = _counting(monkeypatch)
    run = lint_paths([str(root)], make_config(tmp_path, include_cold=False), use_cache=False, jobs=1)
    assert where(run) == []  # the field is host data, as with the second walk
    assert [w for w in walked if w[0] == "pkg.model"] == [("pkg.model", frozenset({"image_grid_thw"}))]


def test_without_kept_fields_nothing_is_inherited_and_the_read_is_flagged(tmp_path, monkeypatch):
    root = _package(tmp_path, keep_on_cpu=False)
    walked = _counting(monkeypatch)
    run = lint_paths([str(root)], make_config(tmp_path, include_cold=False), use_cache=False, jobs=1)
    assert [f[2] for f in where(run)] == ["SYN202"]  # `.tolist()` of a device tensor
    assert [w for w in walked if w[0] == "pkg.model"] == [("pkg.model", frozenset())]


def test_a_warm_run_takes_the_inherited_walk_from_the_cache(tmp_path, monkeypatch):
    root = _package(tmp_path)
    config = make_config(tmp_path, include_cold=False)
    assert where(lint_paths([str(root)], config, jobs=1)) == []
    walked = _counting(monkeypatch)
    assert where(lint_paths([str(root)], config, jobs=1)) == []  # warm: nothing walked again
    assert walked == []


def test_configs_ahead_reads_a_processor_and_leaves_invalid_files_to_the_analysis():
    assert configs_ahead("class Processor(:\n", "pkg.broken", False) is None
    found = configs_ahead(textwrap.dedent(base(True)), "pkg.omni", False)
    assert found.kept == frozenset({"image_grid_thw"}) and "pkg.omni.OmniMultiModalProcessor" in found.processors
