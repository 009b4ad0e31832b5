"""`syncscope baseline create` and `syncscope gate`: exit codes, shrink-only updates, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from syncscope.ci import baseline as bl
from syncscope.ci import gate
from syncscope.cli import app
from test_gate_support import lint_output, runtime_report, write

SOURCE = '''\
class Engine:
    def step(self, x, lens):
        n = lens.sum().item()
        m = x.max().item()
        return n + m
'''
NEW_SYNC = SOURCE.replace("        return n + m", "        k = x.min().item()\n        return n + m + k")
FIXED_ONE = SOURCE.replace("        m = x.max().item()\n", "        m = 0\n")
SHIFTED = "import os\nimport sys\n\n" + SOURCE

runner = CliRunner()


def cli(*args: str):
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture
def files(tmp_path):
    def make(name, source, maker=runtime_report, **kw):
        return write(tmp_path, name, maker(source, **kw))

    return make


@pytest.fixture
def baseline_file(tmp_path, files):
    path = str(tmp_path / "baseline.json")
    code, out = cli("baseline", "create", files("before.json", SOURCE), "-o", path)
    assert code == 0, out
    return path


def test_create_then_gate_same_report_passes(baseline_file, files):
    code, out = cli("gate", files("same.json", SOURCE), "--baseline", baseline_file)
    assert code == 0, out
    assert "passed" in out


def test_gate_passes_when_lines_were_inserted_above(baseline_file, files):
    assert cli("gate", files("shifted.json", SHIFTED), "--baseline", baseline_file)[0] == 0


def test_gate_fails_on_a_new_site_and_prints_it_with_its_stack(baseline_file, files):
    code, out = cli("gate", files("after.json", NEW_SYNC), "--baseline", baseline_file)
    assert code == 1
    assert "1 new sync site" in out
    assert "model.py:5: item in Engine.step" in out
    assert "k = x.min().item()" in out
    assert "called from main.py:3 in <module>" in out


def test_gate_works_on_lint_output(tmp_path, files):
    path = str(tmp_path / "lint-baseline.json")
    assert cli("baseline", "create", files("lint.json", SOURCE, lint_output), "-o", path)[0] == 0
    assert cli("gate", files("lint2.json", SHIFTED, lint_output), "--baseline", path)[0] == 0
    code, out = cli("gate", files("lint3.json", NEW_SYNC, lint_output), "--baseline", path)
    assert code == 1 and "SYN401 in Engine.step" in out


def test_fixed_sites_are_reported_and_update_drops_them(baseline_file, files):
    code, out = cli("gate", files("fixed.json", FIXED_ONE), "--baseline", baseline_file, "--update")
    assert code == 0, out
    assert "dropped 1 fixed site" in out
    assert len(bl.load_baseline(baseline_file).entries) == 1


def test_update_never_adds_and_leaves_a_failing_baseline_untouched(baseline_file, files):
    before = open(baseline_file, "rb").read()
    # One site fixed and one new: the gate fails, so nothing is written at all.
    report = files("mixed.json", NEW_SYNC.replace("        m = x.max().item()\n", "        m = 0\n"))
    code, out = cli("gate", report, "--baseline", baseline_file, "--update")
    assert code == 1
    assert "left unchanged" in out
    assert open(baseline_file, "rb").read() == before


@settings(max_examples=60, deadline=None)
@given(accepted=st.sets(st.integers(0, 7)), seen=st.sets(st.integers(0, 7)))
def test_update_only_ever_shrinks(tmp_path_factory, accepted, seen):
    """Whatever was accepted and whatever is seen, the updated baseline is a subset of the old."""
    tmp = tmp_path_factory.mktemp("shrink")

    def source(indices):
        body = "".join(f"    v{i} = x[{i}].item()\n" for i in sorted(indices))
        return "def step(x):\n" + (body or "    pass\n")

    path = str(tmp / "baseline.json")
    bl.save_baseline(bl.create(bl.load_observation(write(tmp, "a.json", runtime_report(source(accepted))))), path)
    old = bl.load_baseline(path).fingerprints()
    code, _ = cli("gate", write(tmp, "s.json", runtime_report(source(seen))), "--baseline", path, "--update")
    new = bl.load_baseline(path).fingerprints()
    assert new <= old
    assert code == (0 if seen <= accepted else 1)
    if code == 0:
        assert len(new) == len(seen)


@pytest.mark.parametrize(
    "content",
    ["", "{trunc", '{"schema": "syncscope.report", "version": 1, "sites": [{"path": "a.py"}]}', '{"schema": "other"}', "42"],
)
def test_malformed_report_exits_2_and_never_touches_the_baseline(baseline_file, tmp_path, content):
    before = open(baseline_file, "rb").read()
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    code, out = cli("gate", str(bad), "--baseline", baseline_file, "--update")
    assert code == 2
    assert "syncscope: error:" in out and "bad.json" in out
    assert open(baseline_file, "rb").read() == before


def test_malformed_baseline_exits_2_and_is_left_as_is(tmp_path, files):
    bad = tmp_path / "baseline.json"
    bad.write_text('{"schema": "syncscope.baseline", "version": 1, "origin": "runtime", "sites": [{"fingerprint": ""}]}')
    before = bad.read_bytes()
    code, out = cli("gate", files("r.json", SOURCE), "--baseline", str(bad), "--update")
    assert code == 2 and "malformed" in out
    assert bad.read_bytes() == before


def test_missing_files_exit_2(tmp_path, baseline_file, files):
    assert cli("gate", str(tmp_path / "nope.json"), "--baseline", baseline_file)[0] == 2
    code, out = cli("gate", files("r.json", SOURCE), "--baseline", str(tmp_path / "nope.json"))
    assert code == 2 and "no such baseline" in out


def test_create_refuses_to_overwrite_and_a_failed_create_writes_nothing(baseline_file, tmp_path):
    before = open(baseline_file, "rb").read()
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert cli("baseline", "create", str(bad), "-o", baseline_file)[0] == 2
    assert cli("baseline", "create", str(bad), "-o", baseline_file, "--force")[0] == 2
    assert open(baseline_file, "rb").read() == before
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_per_step_budgets(tmp_path, files):
    path = str(tmp_path / "b.json")
    code, out = cli("baseline", "create", files("r.json", SOURCE, counts={3: 4, 4: 4}), "-o", path, "--budget", "1", "--steps", "4")
    assert code == 0, out
    assert [e.max_per_step for e in bl.load_baseline(path).entries] == [1.0, 1.0]
    assert cli("gate", files("ok.json", SOURCE, counts={3: 4, 4: 4}), "--baseline", path, "--steps", "4")[0] == 0
    code, out = cli("gate", files("over.json", SOURCE, counts={3: 9, 4: 4}), "--baseline", path, "--steps", "4")
    assert code == 1 and "2.25 times per step, budget 1" in out
    code, out = cli("gate", files("ok.json", SOURCE), "--baseline", path)
    assert code == 2 and "--steps" in out


def test_gate_writes_a_markdown_summary(baseline_file, files, tmp_path):
    summary = tmp_path / "summary.md"
    code, _ = cli("gate", files("after.json", NEW_SYNC), "--baseline", baseline_file, "--markdown", str(summary))
    text = summary.read_text()
    assert code == 1 and "## syncscope gate :x: failed" in text and "`k = x.min().item()`" in text


def test_exit_codes_through_the_real_command_line(baseline_file, files):
    """The installed console entry point, in a fresh process: what a CI job sees."""
    cmd = [sys.executable, "-m", "syncscope", "gate", "--baseline", baseline_file]
    assert subprocess.run(cmd + [files("same.json", SOURCE)], capture_output=True).returncode == 0
    proc = subprocess.run(cmd + [files("new.json", NEW_SYNC)], capture_output=True, text=True)
    assert proc.returncode == 1 and "k = x.min().item()" in proc.stderr
    assert subprocess.run(cmd + [baseline_file], capture_output=True).returncode == 2


def test_gate_check_is_pure(files):
    observation = bl.load_observation(files("r.json", NEW_SYNC))
    result = gate.check(observation, bl.Baseline("runtime", ()))
    assert len(result.new) == 3 and result.exit_code == 1 and not result.fixed


def test_gate_never_imports_torch(baseline_file, files):
    code = (
        "import sys; from typer.testing import CliRunner; from syncscope.cli import app; "
        f"r = CliRunner().invoke(app, ['gate', {files('same.json', SOURCE)!r}, '--baseline', {baseline_file!r}]); "
        "assert r.exit_code == 0, r.output; assert 'torch' not in sys.modules, 'torch imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


LINTED = '''\
import torch


def unrelated(x):
    return x + 1


class Engine:
    def step(self, x, lens):
        n = lens.sum().item()
        return n
'''


def test_gate_on_real_lint_output(tmp_path):
    """`syncscope lint --output-format json` -> baseline -> unrelated edits pass -> a copy of the
    sync in another function fails."""

    def lint(source: str, name: str) -> str:
        (tmp_path / "model.py").write_text(source)
        proc = subprocess.run([sys.executable, "-m", "syncscope", "lint", "model.py", "--output-format", "json", "--no-cache"],
                              cwd=tmp_path, capture_output=True, text=True)
        if proc.returncode == 2 and "--no-cache" in proc.stderr:  # an older lint without the flag
            proc = subprocess.run([sys.executable, "-m", "syncscope", "lint", "model.py", "--output-format", "json"],
                                  cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 1, proc.stderr
        (tmp_path / name).write_text(proc.stdout)
        return str(tmp_path / name)

    first = lint(LINTED, "lint1.json")
    # The gate reads lint output with the one fingerprint of syncscope.site: the linter's own.
    assert {o.fingerprint for o in bl.load_observation(first).sites} == {f["fingerprint"] for f in json.load(open(first))}
    baseline = str(tmp_path / "baseline.json")
    assert cli("baseline", "create", first, "-o", baseline)[0] == 0
    edited = "import os\n\n\n" + LINTED.replace("def unrelated(", "def renamed_helper(")
    assert cli("gate", lint(edited, "lint2.json"), "--baseline", baseline)[0] == 0
    # the copy runs per step (a module's forward), so the linter's default scope reports it
    copied = edited + "\n\nclass Sampler:\n    def forward(self, lens):\n        n = lens.sum().item()\n        return n\n"
    code, out = cli("gate", lint(copied, "lint3.json"), "--baseline", baseline)
    assert code == 1 and "SYN201 in Sampler.forward" in out, out


def test_a_lint_finding_the_code_accepts_is_not_gated(tmp_path):
    """A sync added inside `with syncscope.allow_sync(...)` is accepted in code, as the runtime's
    allowed syncs are: the gate passes. The same sync outside the block fails it."""

    def lint(source: str, name: str) -> str:
        (tmp_path / "model.py").write_text(source)
        proc = subprocess.run([sys.executable, "-m", "syncscope", "lint", "model.py", "--output-format", "json", "--no-cache"],
                              cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 1, proc.stderr
        (tmp_path / name).write_text(proc.stdout)
        return str(tmp_path / name)

    baseline = str(tmp_path / "baseline.json")
    assert cli("baseline", "create", lint(LINTED, "lint1.json"), "-o", baseline)[0] == 0
    new = "        m = x.max().item()\n        return n + m"
    inside = LINTED.replace("import torch", "import syncscope\nimport torch").replace(
        "        return n", "        with syncscope.allow_sync('debug read'):\n    " + new.replace("\n", "\n    ", 1))
    accepted = lint(inside, "lint2.json")
    assert any(f.get("accepted") for f in json.load(open(accepted)))
    assert cli("gate", accepted, "--baseline", baseline)[0] == 0
    code, out = cli("gate", lint(LINTED.replace("        return n", new), "lint3.json"), "--baseline", baseline)
    assert code == 1 and "SYN201 in Engine.step" in out, out
