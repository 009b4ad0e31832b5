"""The head start of a run on a few named files (head_start.py): a forked child analyzes them
while the run finds the project's files and loads the cache. Its results are taken only where
they are what the run would have computed; otherwise, and whenever the child fails, the run
analyzes the file itself. The child never outlives the run.

Each case runs in a fresh interpreter: the head start stands aside in a process with other
threads, and a test session may hold some that earlier tests left."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from test_lint_subset import make_project

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the head start needs fork")

TESTS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TESTS)

# Runs one case: fills the cache with a whole-tree run, edits (or not) pkg/model.py, lints it
# alone, and prints what the run analyzed itself, the head start's fate and the findings.
CASE = r"""
import json, os, sys, threading
from syncscope.lint import analysis_runs, head_start
from syncscope.lint.config import load_config
from syncscope.lint.engine import lint_paths

root, case = sys.argv[1], sys.argv[2]
config = load_config(root)
model = os.path.join(root, "pkg", "model.py")
lint_paths([root], config, jobs=2)  # fills the cache

analyzed, starts, closed = [], [], []
own_analyze_all, own_begin, own_close = analysis_runs.analyze_all, head_start.HeadStart.begin, head_start.HeadStart.close
def analyze_all(todo, *args):
    analyzed.extend(task[1] for task in todo)
    return own_analyze_all(todo, *args)
def begin(*args):
    started = own_begin(*args)
    starts.append(started)
    return started
def close(self):
    closed.append((self.pid, self.answers is None))
    own_close(self)
analysis_runs.analyze_all = analyze_all
head_start.HeadStart.begin = begin
head_start.HeadStart.close = close

if case != "unchanged":
    with open(model, "a") as handle:
        handle.write("\n\ndef extra(x):\n    return x\n")
if case == "child fails":
    def crash(files, config):
        raise RuntimeError("the child fails")
    head_start._analyze = crash
if case == "other bytes":  # the file changed between the child's read and the run's
    own_analyze = head_start._analyze
    head_start._analyze = lambda files, config: {
        path: ("another digest",) + answer[1:] for path, answer in own_analyze(files, config).items()}
if case == "fork fails":
    def no_fork():
        raise OSError(11, "Resource temporarily unavailable")
    os.fork = no_fork
jobs, use_cache = (1, True) if case == "one job" else (2, case != "no cache")
if case == "another thread":
    release = threading.Event()
    threading.Thread(target=release.wait).start()
run = lint_paths([model], config, jobs=jobs, use_cache=use_cache)
if case == "another thread":
    release.set()
pid = closed[0][0] if closed else 0
gone = True
if pid:
    try:
        os.kill(pid, 0)
        gone = False
    except ProcessLookupError:
        pass
print(json.dumps({
    "analyzed": analyzed, "started": [s is not None for s in starts], "closed_unread": [c[1] for c in closed],
    "child_gone": gone and all(s is None or s.pid == 0 for s in starts), "cached": run.cached,
    "findings": sorted([f.site.path, f.site.line, f.code] for f in run.findings)}))
"""


def _case(tmp_path, case: str) -> dict:
    make_project(tmp_path)
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, "-c", CASE, str(tmp_path), case], capture_output=True, text=True,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_an_edited_file_is_analyzed_by_the_head_start(tmp_path):
    out = _case(tmp_path, "edited")
    assert out["started"] == [True] and out["closed_unread"] == [False] and out["child_gone"]
    assert "pkg/model.py" not in out["analyzed"]  # the child's result was taken
    assert out["findings"] == [["pkg/model.py", 7, "SYN601"]]  # the sync is in pkg/ops/chunks.py


def test_an_unchanged_file_stops_the_child_unread(tmp_path):
    out = _case(tmp_path, "unchanged")
    assert out["started"] == [True] and out["closed_unread"] == [True] and out["child_gone"]
    assert out["analyzed"] == [] and out["cached"] == 5
    assert out["findings"] == [["pkg/model.py", 7, "SYN601"]]


@pytest.mark.parametrize("case", ["child fails", "other bytes"])
def test_the_run_analyzes_what_the_child_cannot_give(tmp_path, case):
    out = _case(tmp_path, case)
    assert out["started"] == [True] and out["child_gone"]
    assert "pkg/model.py" in out["analyzed"]
    assert out["findings"] == [["pkg/model.py", 7, "SYN601"]]


@pytest.mark.parametrize("case", ["one job", "no cache", "another thread", "fork fails"])
def test_no_head_start_where_the_run_stays_one_process(tmp_path, case):
    out = _case(tmp_path, case)
    assert out["started"] in ([False], [])  # `no cache` does not even ask
    assert "pkg/model.py" in out["analyzed"]
    assert out["findings"] == [["pkg/model.py", 7, "SYN601"]]
