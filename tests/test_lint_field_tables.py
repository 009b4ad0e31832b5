"""The field tables a run judges findings by (field_tables.py): unions over every file's result.
A run with a head start builds them from the cached results while its child analyzes the named
files, and adds the new results after; a staged edit in one file that decides whether another
file's field is a device tensor must count with its new result, never with the one the cache
held. Both ways of running (one job; the head start) report what a whole run does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from syncscope.lint.config import load_config
from syncscope.lint.engine import lint_paths
from syncscope.lint.field_tables import FieldTables
from syncscope.lint.worker import analyze_file
from test_lint_store_owners import HOST_SUBCLASSES, POOL, RUNNER, SHAPES

# A subclass of the pool (in a file of its own) whose state keeps `temporal` on the host: with
# it, `self.mamba_cache.temporal` may be a host tensor and the pool's store is not reported.
HOST_POOL = """
    import torch
    from pkg.pool import MambaPool
""" + HOST_SUBCLASSES
NO_HOST_POOL = """
    import torch

    def host_buffer(size):
        return torch.zeros((2, size, 4)).pin_memory()
"""
STORE = ("pkg/pool.py", 19, "SYN406")  # temporal[:, indices] = 0
STAGED = ("pkg/pool.py", "pkg/hostpool.py")
TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)


def _write(tmp_path, name, source):
    path = tmp_path / "pkg" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    stat = path.stat()  # a new mtime, as after an editor's save
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))


def _project(tmp_path, host_pool: str):
    # cold findings too: a store the tables drop must be gone, not only moved out of the default
    # report (with the host subclass, the pool's other store is also off every per-step path)
    (tmp_path / "pyproject.toml").write_text("[tool.syncscope.lint]\ninclude-cold = true\n")
    for name, source in {"__init__.py": "", "pool.py": POOL, "shapes.py": SHAPES, "runner.py": RUNNER,
                         "hostpool.py": host_pool}.items():
        _write(tmp_path, name, source)
    return load_config(str(tmp_path))


def _where(run):
    return sorted((f.site.path, f.site.line, f.code) for f in run.findings)


def _staged(tmp_path, config):
    """The pre-commit hook's run: the staged files named, the rest of the project cached."""
    return lint_paths([str(tmp_path / "pkg" / "pool.py"), str(tmp_path / "pkg" / "hostpool.py")], config, jobs=1)


# The staged run with a head start (two jobs; head_start.py), in a fresh interpreter: a test
# session may hold threads, and the head start stands aside beside threads. Prints whether a
# head start ran and what the staged run and a whole run without the cache report.
STAGED_RUN = r"""
import json, sys
from syncscope.lint import head_start
from syncscope.lint.config import load_config
from syncscope.lint.engine import lint_paths

root = sys.argv[1]
config = load_config(root)
starts = []
own_begin = head_start.HeadStart.begin
def begin(*args):
    head = own_begin(*args)
    starts.append(head is not None)
    return head
head_start.HeadStart.begin = begin
where = lambda run: sorted([f.site.path, f.site.line, f.code] for f in run.findings)
staged = lint_paths([root + "/pkg/pool.py", root + "/pkg/hostpool.py"], config, jobs=2)
whole = lint_paths([root], config, use_cache=False, jobs=2)
print(json.dumps({"head_start": starts, "staged": where(staged),
                  "whole": [w for w in where(whole) if w[0] in ("pkg/pool.py", "pkg/hostpool.py")]}))
"""


def _staged_with_head_start(tmp_path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([REPO, TESTS]))
    done = subprocess.run([sys.executable, "-c", STAGED_RUN, str(tmp_path)], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _staged_and_whole(tmp_path, config, head_start: bool) -> tuple[list, list]:
    """What the staged run reports for the two staged files, with one job or with a head start,
    and what a whole run without the cache reports for them."""
    if not head_start:
        whole = lint_paths([str(tmp_path)], config, use_cache=False, jobs=1)
        return _where(_staged(tmp_path, config)), [w for w in _where(whole) if w[0] in STAGED]
    if not hasattr(os, "fork"):
        pytest.skip("the head start needs fork")
    out = _staged_with_head_start(tmp_path)
    assert out["head_start"] == [True]
    return [tuple(w) for w in out["staged"]], [tuple(w) for w in out["whole"]]


@pytest.mark.parametrize("head_start", [False, True], ids=["one job", "head start"])
def test_a_staged_edit_that_takes_the_host_subclass_out_reports_the_store(tmp_path, head_start):
    config = _project(tmp_path, HOST_POOL)
    assert STORE not in _where(lint_paths([str(tmp_path)], config, jobs=1))  # fills the cache
    _write(tmp_path, "hostpool.py", NO_HOST_POOL)
    staged, whole = _staged_and_whole(tmp_path, config, head_start)
    assert STORE in staged
    assert staged == whole


@pytest.mark.parametrize("head_start", [False, True], ids=["one job", "head start"])
def test_a_staged_edit_that_adds_the_host_subclass_drops_the_store(tmp_path, head_start):
    config = _project(tmp_path, NO_HOST_POOL)
    assert STORE in _where(lint_paths([str(tmp_path)], config, jobs=1))
    _write(tmp_path, "hostpool.py", HOST_POOL)
    staged, whole = _staged_and_whole(tmp_path, config, head_start)
    assert STORE not in staged
    assert staged == whole


def test_the_tables_do_not_depend_on_the_order_the_results_come_in(tmp_path):
    config = _project(tmp_path, HOST_POOL)
    results = {}
    for name in ("pool.py", "shapes.py", "runner.py", "hostpool.py"):
        results[name] = analyze_file(str(tmp_path / "pkg" / name), f"pkg.{name[:-3]}", False, config)
    forward = FieldTables.of(results)
    backward = FieldTables.of(dict(reversed(list(results.items()))))
    assert forward.device_attributes() == backward.device_attributes()
    assert forward.host_fields(results) == backward.host_fields(results)
    owners, owners_back = forward.owner_fields(), backward.owner_fields()
    assert (owners.places, owners.types, owners.bases, owners.subclasses) == \
        (owners_back.places, owners_back.types, owners_back.bases, owners_back.subclasses)
    assert owners.places.get("HostState.temporal")  # the tables hold the host subclass's field
