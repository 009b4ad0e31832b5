"""Fail closed (issue 28): a report always says how its run ended, and the gate never passes,
nor a baseline shrink, on a run that could not check everything. On the real CLI, in
subprocesses: exit codes, the one-line messages, and the files on disk before and after."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROGRAM = """
import sys
import torch
x = torch.ones(4, device="cuda")
def step():
    return x.sum().item()          # STEP-SYNC
def extra():
    return x.tolist()              # EXTRA-SYNC
"""


def _env():
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def syncscope(cwd, *args, timeout=180):
    return subprocess.run([sys.executable, "-m", "syncscope", *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=timeout)


def write_program(tmp_path, tail: str, name="prog.py"):
    (tmp_path / name).write_text(textwrap.dedent(PROGRAM) + textwrap.dedent(tail))
    return name


def run(tmp_path, *args):
    return syncscope(tmp_path, "run", "--device", "sim", "--no-table", "-o", "report.json", *args)


def report(tmp_path) -> dict:
    return json.loads((tmp_path / "report.json").read_text())


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture
def baselined(tmp_path):
    """A completed run that reached both syncs, and a baseline of it."""
    write_program(tmp_path, "step(); extra()\n")
    done = run(tmp_path, "prog.py")
    assert done.returncode == 0, done.stderr
    assert report(tmp_path)["status"] == "completed" and report(tmp_path)["ending"] == "ok"
    made = syncscope(tmp_path, "baseline", "create", "report.json", "-o", "base.json")
    assert made.returncode == 0, made.stderr
    assert len(json.loads((tmp_path / "base.json").read_text())["sites"]) == 2
    return tmp_path


def gate_refuses_and_update_keeps(tmp_path, words: str) -> None:
    """The gate exits 2 with one line; with --allow-incomplete it gates, but --update leaves the
    baseline byte for byte as it was."""
    before = (tmp_path / "base.json").read_bytes()
    gate = syncscope(tmp_path, "gate", "report.json", "--baseline", "base.json")
    assert gate.returncode == 2, gate.stdout + gate.stderr
    line = one_line(gate.stderr)
    assert line.startswith("syncscope: error: report.json: the run ") and words in line and "--allow-incomplete" in line, line
    assert gate.stdout == ""
    update = syncscope(tmp_path, "gate", "report.json", "--baseline", "base.json", "--update")
    assert update.returncode == 2 and (tmp_path / "base.json").read_bytes() == before
    allowed = syncscope(tmp_path, "gate", "report.json", "--baseline", "base.json", "--update", "--allow-incomplete")
    assert allowed.returncode == 0, allowed.stderr
    assert "left unchanged (the run did not complete" in allowed.stderr
    assert (tmp_path / "base.json").read_bytes() == before
    create = syncscope(tmp_path, "baseline", "create", "report.json", "-o", "other.json")
    assert create.returncode == 2 and not (tmp_path / "other.json").exists()
    assert "refusing to create a baseline from it" in one_line(create.stderr)


@pytest.mark.parametrize("args", [["nosuch.py"], ["-m", "nosuchmod_i28"]], ids=["script", "module"])
def test_a_run_that_never_started_says_so_over_the_old_report(baselined, args):
    tmp_path = baselined
    old = report(tmp_path)
    never = run(tmp_path, *args)
    assert never.returncode == 2
    line = one_line(never.stderr)
    assert line.startswith("syncscope: error: ") and ("nosuch.py" in line or "nosuchmod_i28" in line)
    now = report(tmp_path)
    assert now["created"] and now["sites"] == [] and now is not old
    assert (now["status"], now["ending"], now["exit_code"]) == ("never_started", "never_started", 2)
    assert now["error"] == line.removeprefix("syncscope: error: ")
    gate_refuses_and_update_keeps(tmp_path, "never started")


def test_a_crash_before_the_loop_fails_the_gate(baselined):
    tmp_path = baselined
    write_program(tmp_path, "raise SystemExit('bad config')\nstep()\n")
    crashed = run(tmp_path, "prog.py")
    assert crashed.returncode == 1 and crashed.stderr.strip().splitlines()[0] == "bad config"
    data = report(tmp_path)
    assert (data["status"], data["ending"], data["exit_code"], data["error"]) == ("failed", "exit", 1, "bad config")
    assert data["sites"] == []
    gate_refuses_and_update_keeps(tmp_path, "failed (exit code 1: bad config)")


def test_a_crash_mid_run_fails_the_gate_and_never_shrinks_the_baseline(baselined):
    tmp_path = baselined
    write_program(tmp_path, "step()\nraise ValueError('boom')\nextra()\n")
    crashed = run(tmp_path, "prog.py")
    assert crashed.returncode == 1 and "ValueError: boom" in crashed.stderr
    data = report(tmp_path)
    assert (data["status"], data["ending"], data["error"]) == ("failed", "exception", "ValueError: boom")
    assert [s["kind"] for s in data["sites"]] == ["item"]  # what it saw before the crash
    gate_refuses_and_update_keeps(tmp_path, "failed (exit code 1: ValueError: boom)")


def test_a_killed_run_fails_the_gate(baselined):
    tmp_path = baselined
    write_program(tmp_path, "import os, signal\nstep()\nos.kill(os.getpid(), signal.SIGKILL)\n")
    killed = run(tmp_path, "prog.py")
    assert killed.returncode == -signal.SIGKILL
    assert report(tmp_path)["status"] == "running"  # the flush made on the first site
    gate_refuses_and_update_keeps(tmp_path, "was killed")


def test_a_completed_run_still_gates_and_shrinks(baselined):
    tmp_path = baselined
    write_program(tmp_path, "step()\n")
    assert run(tmp_path, "prog.py").returncode == 0
    gate = syncscope(tmp_path, "gate", "report.json", "--baseline", "base.json", "--update")
    assert gate.returncode == 0, gate.stderr
    assert len(json.loads((tmp_path / "base.json").read_text())["sites"]) == 1


def test_combine_carries_the_worst_status(tmp_path):
    write_program(tmp_path, "step()\n", "good.py")
    write_program(tmp_path, "step()\nraise ValueError('rank 1 died')\n", "bad.py")
    assert syncscope(tmp_path, "run", "--device", "sim", "--no-table", "-o", "a.json", "good.py").returncode == 0
    assert syncscope(tmp_path, "run", "--device", "sim", "--no-table", "-o", "b.json", "bad.py").returncode == 1
    combined = syncscope(tmp_path, "combine", "a.json", "b.json", "-o", "all.json")
    assert combined.returncode == 0, combined.stderr
    data = json.loads((tmp_path / "all.json").read_text())
    assert (data["status"], data["error"]) == ("failed", "ValueError: rank 1 died")
    assert sorted(p["status"] for p in data["combined_from"]) == ["completed", "failed"]
    made = syncscope(tmp_path, "baseline", "create", "a.json", "-o", "base.json")
    assert made.returncode == 0
    gate = syncscope(tmp_path, "gate", "all.json", "--baseline", "base.json")
    assert gate.returncode == 2 and "the run failed" in one_line(gate.stderr)
    # with only completed parts, the combined report is completed
    assert syncscope(tmp_path, "combine", "a.json", "-o", "one.json").returncode == 0
    assert json.loads((tmp_path / "one.json").read_text())["status"] == "completed"


def test_an_old_report_without_a_status_is_not_gated(tmp_path):
    """The empty report older syncscopes wrote for a run that never started."""
    write_program(tmp_path, "step()\n")
    assert run(tmp_path, "prog.py").returncode == 0
    assert syncscope(tmp_path, "baseline", "create", "report.json", "-o", "base.json").returncode == 0
    data = report(tmp_path)
    for key in ("status", "ending", "exit_code", "error"):
        data.pop(key)
    data["sites"], data["events"] = [], []
    (tmp_path / "report.json").write_text(json.dumps(data))
    gate = syncscope(tmp_path, "gate", "report.json", "--baseline", "base.json")
    assert gate.returncode == 2 and "never started" in one_line(gate.stderr)


# -- selectors of the runtime side that name nothing ----------------------------------------------
BUILDER = """
import torch
class Base:
    pass
class Builder{bases}:
    def build(self):
        return torch.ones(2, device="cuda").sum().item()
Builder().build()
"""


@pytest.mark.parametrize(
    "bases, option, message",
    [
        ("", "__main__:Builder.bulid", "--scope __main__:Builder.bulid: class Builder in prog.py has no method 'bulid'; did you mean 'build'?"),
        ("", "__main__:Buildr.build", "--scope __main__:Buildr.build: prog.py defines no class 'Buildr'; did you mean 'Builder'?"),
        ("", "prog.py:Buildr.build", "--scope prog.py:Buildr.build: prog.py defines no class 'Buildr'; did you mean 'Builder'?"),
        ("", "nosuchmod_i28:F.g", "--scope nosuchmod_i28:F.g: no module named 'nosuchmod_i28'"),
        ("", "json:dumsp", "--scope json:dumsp: json has no attribute 'dumsp'; did you mean 'dump'?"),
        ("", "json.decodr:JSONDecoder.decode", "--scope json.decodr:JSONDecoder.decode: no module named 'json.decodr'; did you mean 'json.decoder'?"),
    ],
)
def test_a_scope_that_names_nothing_never_starts_the_program(tmp_path, bases, option, message):
    (tmp_path / "prog.py").write_text(BUILDER.format(bases=bases) + "open('started', 'w').close()\n")
    result = run(tmp_path, "--scope", option, "prog.py")
    assert result.returncode == 2
    assert one_line(result.stderr).startswith("syncscope: error: " + message), result.stderr
    assert not (tmp_path / "started").exists()
    assert report(tmp_path)["status"] == "never_started"


@pytest.mark.parametrize("policy", ["record", "error"])
def test_a_scope_on_an_inherited_class_that_never_matched_fails_the_run(tmp_path, policy):
    """A class with bases may inherit the method: checked when the program defines it."""
    (tmp_path / "prog.py").write_text(BUILDER.format(bases="(Base)"))
    result = run(tmp_path, "--policy", policy, "--scope", "__main__:Builder.bulid", "prog.py")
    assert result.returncode == 2
    error = "--scope __main__:Builder.bulid: class Builder has no attribute 'bulid'; did you mean 'build'?"
    assert f"syncscope: error: {error}" in result.stderr.splitlines()
    data = report(tmp_path)
    assert (data["status"], data["ending"], data["exit_code"], data["error"]) == ("failed", "ok", 2, error)


def test_a_scope_that_names_a_real_method_still_works(tmp_path):
    (tmp_path / "prog.py").write_text(BUILDER.format(bases="(Base)"))
    result = run(tmp_path, "--scope", "__main__:Builder.build", "prog.py")
    assert result.returncode == 0, result.stderr
    data = report(tmp_path)
    assert data["status"] == "completed" and data["summary"]["in_scope_events"] == 1


@pytest.mark.parametrize(
    "pyproject, option, message",
    [
        (None, "prog.py:3@itme", "--allow prog.py:3@itme: kind 'itme' names no kind of sync; did you mean 'item'?"),
        (None, "prog.py@h2d_*x", "--allow prog.py@h2d_*x: kind 'h2d_*x' names no kind of sync"),
        ('[tool.syncscope.run]\nallow = [{path = "prog.py", kind = "itme"}]\n', None,
         "{pyproject}: [tool.syncscope.run] allow entry 0: kind 'itme' names no kind of sync; did you mean 'item'?"),
        ('[tool.syncscope.run]\nallow = [{path = "prog.py", knd = "item"}]\n', None,
         "{pyproject}: [tool.syncscope.run] allow entry 0: unknown key 'knd'; did you mean 'kind'?"),
        ('[tool.syncscope.run]\nalow = []\n', None, "{pyproject}: [tool.syncscope.run]: unknown key 'alow'; did you mean 'allow'?"),
        ('[tool.syncscope.rnu]\nallow = []\n', None, "{pyproject}: unknown table [tool.syncscope.rnu]"),
    ],
)
def test_an_allow_entry_or_table_that_names_nothing_is_an_error(tmp_path, pyproject, option, message):
    (tmp_path / "prog.py").write_text("open('started', 'w').close()\n")
    if pyproject:
        (tmp_path / "pyproject.toml").write_text(pyproject)
    result = run(tmp_path, *(["--allow", option] if option else []), "prog.py")
    assert result.returncode == 2
    line = one_line(result.stderr)
    assert line.startswith("syncscope: error: " + message.format(pyproject=tmp_path / "pyproject.toml")), line
    assert not (tmp_path / "started").exists() and report(tmp_path)["status"] == "never_started"


def test_a_valid_allow_kind_glob_is_accepted(tmp_path):
    write_program(tmp_path, "step()\n")
    result = run(tmp_path, "--allow", "prog.py@it*", "prog.py")
    assert result.returncode == 0, result.stderr
    assert report(tmp_path)["sites"][0]["allowed"] is True


def test_no_table_still_says_where_the_report_is_and_how_the_run_ended(tmp_path):
    write_program(tmp_path, "step()\n")
    result = run(tmp_path, "prog.py")
    assert one_line(result.stderr) == f"syncscope: report {tmp_path / 'report.json'}: run completed, 1 host sync in scope"


# -- the umask ----------------------------------------------------------------------------------
UMASK_PROGRAM = """
import os, threading, torch
os.umask(0o027)
calls = []
real_umask = os.umask
def spy(mask):
    calls.append(mask)
    return real_umask(mask)
os.umask = spy                         # syncscope may read the mask, never set it
x = torch.ones(2, device="cuda")
stop = threading.Event()
made = []
def create():
    i = 0
    while not stop.is_set():
        path = f"out/f{i}"
        with open(path, "w"):
            pass
        made.append(path)
        i += 1
os.makedirs("out")
t = threading.Thread(target=create)
t.start()
source = "".join(f"v{i} = x.sum().item()\\n" for i in range(300))   # 300 sites: 300 reasons to flush
exec(compile(source, "syncs.py", "exec"))
stop.set()
t.join()
modes = {oct(os.stat(p).st_mode & 0o777) for p in made}
print("modes", sorted(modes), "files", len(made) > 0, "umask calls", calls)
"""


def test_the_report_writer_never_sets_the_umask_while_a_thread_creates_files(tmp_path):
    (tmp_path / "prog.py").write_text(UMASK_PROGRAM)
    result = run(tmp_path, "prog.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "modes ['0o640'] files True umask calls []", result.stdout
    assert oct(os.stat(tmp_path / "report.json").st_mode & 0o777) == "0o640"  # as the program's umask says
