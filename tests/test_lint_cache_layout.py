"""The lint cache's layout (syncscope/lint/cache.py): a run that changes one file writes what that
file changed (an entry in the files delta, one facts shard, the tree's solved output), not the
whole tables, and whatever mix of old and new pieces a reader finds, it never gets a wrong
answer: every entry carries the content hash it was made from."""

from __future__ import annotations

import os
import textwrap
import time

import pytest

from syncscope.lint import cache as cache_module
from syncscope.lint.engine import lint_paths

from lint_helpers import make_config


def _package(tmp_path, count=6):
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "helpers.py").write_text("def gather(x):\n    return x.cpu()\n")
    for k in range(count):  # files of the tree the edits below never touch
        (root / f"other{k}.py").write_text(f"import torch\n\ndef f{k}(t: torch.Tensor):\n    return t + {k}\n")
    (root / "step.py").write_text(textwrap.dedent("""
        import torch
        from .helpers import gather

        def step(t: torch.Tensor):
            a = gather(t)
            return t.sum().item()
    """))
    return root


def _findings(root, config, **kw):
    return sorted((f.path, f.line, f.code, f.message) for f in lint_paths([str(root)], config, jobs=1, **kw).findings)


def _pickles(tmp_path) -> dict[str, int]:
    directory = tmp_path / ".syncscope_cache"
    return {name.split("-", 4)[4]: os.stat(directory / name).st_mtime_ns
            for name in os.listdir(directory) if name.endswith(".pickle")}


def test_an_edit_of_one_file_writes_its_delta_entry_and_its_facts_shard_only(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "DELTA_KEPT", 3)  # the cold run writes the table whole
    root = _package(tmp_path)
    config = make_config(tmp_path)
    _findings(root, config)
    before = _pickles(tmp_path)
    assert "files.pickle" in before and "files-delta.pickle" not in before
    assert sum(name.startswith("facts-") for name in before) > 1  # the tree's files spread over shards

    time.sleep(0.01)
    (root / "helpers.py").write_text("def gather(x):\n    return x\n")  # no longer syncs
    edited = _findings(root, config)
    assert edited == _findings(root, config, use_cache=False)
    after = _pickles(tmp_path)
    assert after["files.pickle"] == before["files.pickle"]  # not rewritten
    assert "files-delta.pickle" in after
    changed = sorted(name for name in after if name.startswith("facts-") and after[name] != before.get(name))
    assert changed == ["facts-%02d.pickle" % cache_module._shard("pkg/helpers.py")]
    assert sum(name.startswith("solved-") for name in after) == 2  # the tree before and this one

    assert _findings(root, config) == edited  # read back through the delta


def test_past_the_delta_limit_the_table_is_written_whole_and_the_delta_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "DELTA_KEPT", 1)
    root = _package(tmp_path, count=1)
    config = make_config(tmp_path)
    _findings(root, config)
    for text in ("def gather(x):\n    return x\n", "def gather(x):\n    return x.cpu()\n"):
        time.sleep(0.01)
        (root / "helpers.py").write_text(text)
        _findings(root, config)
        assert "files-delta.pickle" in _pickles(tmp_path)  # one entry: kept apart
        time.sleep(0.01)
        (root / "step.py").write_text((root / "step.py").read_text() + "# edited\n")
        assert _findings(root, config) == _findings(root, config, use_cache=False)
        assert "files-delta.pickle" not in _pickles(tmp_path)  # two: the table rewritten


def test_a_stale_delta_entry_is_a_miss_not_a_wrong_answer(tmp_path, monkeypatch):
    """A delta another run wrote over a table that has moved on (or a table over a delta)
    holds entries made from other contents: their hash does not match, the file is analyzed."""
    monkeypatch.setattr(cache_module, "DELTA_KEPT", 100)
    root = _package(tmp_path, count=1)
    config = make_config(tmp_path)
    _findings(root, config)
    directory = tmp_path / ".syncscope_cache"
    delta = next(directory / n for n in os.listdir(directory) if n.endswith("-files-delta.pickle"))
    old_delta = delta.read_bytes()  # holds helpers.py as it syncs
    time.sleep(0.01)
    (root / "helpers.py").write_text("def gather(x):\n    return x\n")
    edited = _findings(root, config)
    delta.write_bytes(old_delta)  # a slower run's older delta lands last
    assert _findings(root, config) == edited == _findings(root, config, use_cache=False)


def test_only_the_newest_solved_trees_are_kept(tmp_path):
    root = _package(tmp_path, count=1)
    config = make_config(tmp_path)
    for k in range(cache_module.SOLVED_KEPT + 2):
        (root / "helpers.py").write_text(f"def gather(x):\n    return x.cpu()  # {k}\n")
        time.sleep(0.01)
        _findings(root, config)
    assert sum(name.startswith("solved-") for name in _pickles(tmp_path)) == cache_module.SOLVED_KEPT


@pytest.mark.parametrize("part", ["files", "facts", "solved"])
def test_a_damaged_piece_is_read_as_missing(tmp_path, part):
    root = _package(tmp_path, count=1)
    config = make_config(tmp_path)
    fresh = _findings(root, config)
    directory = tmp_path / ".syncscope_cache"
    damaged = [name for name in os.listdir(directory)
               if name.endswith(".pickle") and name.split("-", 4)[4].startswith(part)]
    assert damaged
    for name in damaged:
        (directory / name).write_bytes(b"not a pickle")
    assert _findings(root, config) == fresh


def test_the_code_stamp_changes_with_the_shared_with_blocks_module(monkeypatch):
    # the linter reads accepted blocks through syncscope/with_blocks.py, outside lint/: an edit
    # of it must not let a run read results the old reading made
    before = cache_module.code_stamp()
    real_stat = os.stat

    def edited(path, *args, **kwargs):
        result = real_stat(path, *args, **kwargs)
        if str(path).endswith(os.path.join("syncscope", "with_blocks.py")):
            return os.stat_result((result.st_mode, 0, 0, 0, 0, 0, result.st_size + 1, 0, 0, 0))
        return result

    monkeypatch.setattr(cache_module.os, "stat", edited)
    assert cache_module.code_stamp() != before
