"""`syncscope run` runs a program exactly as `python` would, and always leaves a report.

Each test runs the same program under plain `python` and under `syncscope run --device sim` in
subprocesses and compares what a user can observe.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_both(tmp_path, source, *args, module=None, extra=()):
    (tmp_path / "prog.py").write_text(textwrap.dedent(source))
    target = ["-m", module] if module else [str(tmp_path / "prog.py")]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    plain = subprocess.run([sys.executable, *target, *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    report = tmp_path / "report.json"
    traced = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", str(report), *extra, *target, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    data = json.loads(report.read_text()) if report.exists() else None
    return plain, without_report_line(traced), data


def without_report_line(traced):
    """The program's own stderr: `--no-table` still ends with one line naming the report and how
    the run ended (issue 28), which plain python does not print."""
    lines = traced.stderr.splitlines(keepends=True)
    if lines and lines[-1].startswith("syncscope: report "):
        traced.stderr = "".join(lines[:-1])
    return traced


PROBE = """
import sys
print(repr(sys.argv))
print(__name__, repr(__file__) if '__file__' in dir() else None)
print(repr(sys.path[0]))
print(__spec__.name if __spec__ else None)
"""


def test_script_sees_python_argv_main_and_path(tmp_path):
    plain, traced, report = run_both(tmp_path, PROBE, "a", "--flag", "-o", "x")
    assert traced.returncode == plain.returncode == 0
    assert traced.stdout == plain.stdout
    assert report["status"] == "completed" and report["exit_code"] == 0


def test_module_sees_python_argv_main_and_path(tmp_path):
    plain, traced, report = run_both(tmp_path, PROBE, "b", module="prog")
    assert traced.returncode == plain.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout


@pytest.mark.parametrize("code,expected", [("sys.exit(3)", 3), ("sys.exit(0)", 0), ("sys.exit('bye')", 1), ("sys.exit()", 0)])
def test_exit_codes_pass_through(tmp_path, code, expected):
    plain, traced, report = run_both(tmp_path, f"import sys\nprint('ran')\n{code}\n")
    assert plain.returncode == traced.returncode == expected
    assert traced.stdout == plain.stdout
    assert traced.stderr.strip() == plain.stderr.strip()
    assert report["exit_code"] == expected


def test_exception_traceback_is_pythons_without_syncscope_frames(tmp_path):
    source = """
    def inner():
        raise ValueError("boom")
    def outer():
        inner()
    outer()
    """
    plain, traced, report = run_both(tmp_path, source)
    assert plain.returncode == traced.returncode == 1
    assert traced.stderr.strip() == plain.stderr.strip()
    assert "syncscope" not in traced.stderr
    assert report["status"] == "failed" and report["ending"] == "exception" and "ValueError: boom" in report["error"]


def test_report_written_on_sigint_and_exit_status_matches(tmp_path):
    source = """
    import os, signal, time
    print("started", flush=True)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
    """
    plain, traced, report = run_both(tmp_path, source)
    assert plain.returncode == traced.returncode == -signal.SIGINT
    assert "KeyboardInterrupt" in traced.stderr and "syncscope" not in traced.stderr
    assert report["status"] == "killed" and report["ending"] == "interrupted"


def test_report_written_on_sigterm_and_exit_status_matches(tmp_path):
    source = """
    import os, signal, time
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
    """
    plain, traced, report = run_both(tmp_path, source)
    assert plain.returncode == traced.returncode == -signal.SIGTERM
    assert report["status"] == "killed" and report["ending"] == "terminated"


def test_missing_script_is_a_clear_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "syncscope", "run", "--device", "sim", "nope.py"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert "can't open file" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args,message", [(["--device", "tpu"], "unknown device"), (["--policy", "loud"], "--policy"), (["--scope", "nomodule_xyz:f"], "--scope")])
def test_bad_options_are_clear_errors(tmp_path, args, message):
    (tmp_path / "prog.py").write_text("print('hi')\n")
    proc = subprocess.run([sys.executable, "-m", "syncscope", "run", *args, "prog.py"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_report_command_renders_and_rejects_bad_files(tmp_path):
    plain, traced, report = run_both(tmp_path, "print('x')\n")
    shown = subprocess.run([sys.executable, "-m", "syncscope", "report", str(tmp_path / "report.json"), "--format", "json"], capture_output=True, text=True)
    assert shown.returncode == 0 and json.loads(shown.stdout)["schema"] == "syncscope.report"
    (tmp_path / "bad.json").write_text("{")
    bad = subprocess.run([sys.executable, "-m", "syncscope", "report", str(tmp_path / "bad.json")], capture_output=True, text=True)
    assert bad.returncode == 2 and "cannot read report" in bad.stderr and "Traceback" not in bad.stderr


def test_scope_option_limits_what_is_in_scope(tmp_path):
    (tmp_path / "helpers.py").write_text(textwrap.dedent("""
        import torch
        def hot(x):
            return x.sum().item()
    """))
    source = """
    import torch, helpers
    x = torch.ones(4, device="cuda")
    helpers.hot(x)
    x.tolist()
    """
    plain, traced, report = run_both(tmp_path, source, extra=("--scope", "helpers:hot"))
    assert traced.returncode == 0, traced.stderr
    by_kind = {s["kind"]: s for s in report["sites"]}
    assert by_kind["item"]["in_scope"] and by_kind["item"]["regions"] == ["hot"]
    assert not by_kind["tolist"]["in_scope"]


def test_module_forward_option_scopes_module_calls(tmp_path):
    source = """
    import torch

    class Net(torch.nn.Module):
        def forward(self, x):
            return x.sum().item()

    x = torch.ones(4, device="cuda")
    Net()(x)
    x.tolist()
    """
    plain, traced, report = run_both(tmp_path, source, extra=("--module-forward",))
    assert traced.returncode == 0, traced.stderr
    by_kind = {s["kind"]: s for s in report["sites"]}
    assert by_kind["item"]["in_scope"] and by_kind["item"]["regions"] == ["Net.forward"]
    assert not by_kind["tolist"]["in_scope"]


def test_policy_error_stops_the_program_at_the_line(tmp_path):
    source = """
    import torch
    x = torch.ones(3, device="cuda")
    print("before")
    x.sum().item()
    print("after")
    """
    plain, traced, report = run_both(tmp_path, source, extra=("--policy", "error"))
    assert traced.returncode == 1
    assert "before" in traced.stdout and "after" not in traced.stdout
    assert "HostSyncError" in traced.stderr and 'prog.py", line 5' in traced.stderr
    assert "syncscope/" not in traced.stderr  # no syncscope frame in the traceback
    assert report["status"] == "failed" and report["ending"] == "exception"


def test_directory_with_main_runs_as_python_runs_it(tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    (app / "__main__.py").write_text(PROBE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    plain = subprocess.run([sys.executable, "app", "x"], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120)
    report = tmp_path / "report.json"
    traced = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", str(report), "app", "x"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )
    assert traced.returncode == plain.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout
    assert json.loads(report.read_text())["status"] == "completed"
