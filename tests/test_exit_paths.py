"""Every way a program can end under `syncscope run` leaves a valid report with the sites seen,
and the exit status plain python gives (runtime/keeper.py, docs/reliability.md).

Each program runs under plain `python` and under `syncscope run --device sim`; the table at the
top of docs/reliability.md is this file's cases."""

import glob
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = """
import os, signal, sys, threading, time
import torch
dev = "cuda" if torch.cuda.is_available() else "cpu"
def sync_here():
    return torch.ones(2, device=dev).sum().item()   # SYNC-LINE
"""


def run_both(tmp_path, body, timeout=120):
    source = textwrap.dedent(PRELUDE) + textwrap.dedent(body)
    prog = tmp_path / "prog.py"
    prog.write_text(source)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plain = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=timeout)
    report = tmp_path / "report.json"
    traced = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", str(report), str(prog)],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=timeout,
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


def sync_line():
    return next(i for i, line in enumerate(textwrap.dedent(PRELUDE).splitlines(), 1) if "SYNC-LINE" in line)


def sites(report):
    return {(s["path"], s["line"], s["kind"]) for s in report["sites"]}


def assert_kept(report, count=None):
    assert report is not None, "no report"
    assert ("prog.py", sync_line(), "item") in sites(report), report["sites"]
    if count is not None:
        (site,) = [s for s in report["sites"] if s["line"] == sync_line()]
        assert site["count"] >= count


def assert_no_leftovers(tmp_path):
    assert not glob.glob(str(tmp_path / ".syncscope-*.tmp"))


def test_os_exit_in_main_keeps_status_and_sites(tmp_path):
    plain, traced, report = run_both(tmp_path, "sync_here()\nprint('buffered, lost as under python')\nos._exit(7)\n")
    assert plain.returncode == traced.returncode == 7
    assert traced.stdout == plain.stdout  # stdout's buffer is dropped by os._exit in both
    assert report["ending"] == "os._exit" and report["status"] == "failed" and report["exit_code"] == 7
    assert_kept(report)
    assert_no_leftovers(tmp_path)


def test_os_exit_from_a_signal_handler(tmp_path):
    body = """
    def bye(signum, frame):
        print("handler", flush=True)
        os._exit(3)
    signal.signal(signal.SIGTERM, bye)
    sync_here()
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
    """
    plain, traced, report = run_both(tmp_path, body)
    assert plain.returncode == traced.returncode == 3
    assert traced.stdout == plain.stdout == "handler\n"
    assert report["ending"] == "os._exit"
    assert_kept(report)


def test_os_exit_in_a_child_process_writes_its_report(tmp_path):
    body = """
    import multiprocessing as mp
    def child():
        sync_here()
        os._exit(5)
    if __name__ == "__main__":
        p = mp.get_context("fork").Process(target=child)
        p.start(); p.join()
        print("child exit", p.exitcode)
    """
    plain, traced, report = run_both(tmp_path, body)
    assert plain.returncode == traced.returncode == 0
    assert traced.stdout == plain.stdout == "child exit 5\n"
    (child_path,) = [p for p in glob.glob(str(tmp_path / "report.*.json"))]
    child = json.loads(Path(child_path).read_text())
    assert child["ending"] == "os._exit" and child["status"] == "failed" and child["exit_code"] == 5
    assert_kept(child)
    assert report["sites"] == []  # the parent did not sync; the child's site is not counted twice


def test_uncaught_exception_in_a_thread(tmp_path):
    body = """
    def work():
        sync_here()
        raise RuntimeError("thread dies")
    t = threading.Thread(target=work, name="worker")
    t.start(); t.join()
    print("main goes on")
    """
    plain, traced, report = run_both(tmp_path, body)
    assert plain.returncode == traced.returncode == 0
    assert traced.stdout == plain.stdout
    assert "RuntimeError: thread dies" in traced.stderr and "syncscope" not in traced.stderr
    assert traced.stderr.strip().splitlines()[-1] == plain.stderr.strip().splitlines()[-1]
    assert report["status"] == "completed"
    assert_kept(report)


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGQUIT"])
def test_fatal_signals_die_as_python_and_keep_sites(tmp_path, signame):
    body = f"""
    try:
        sync_here()
        print("before", flush=True)
        os.kill(os.getpid(), signal.{signame})
        time.sleep(5)
    finally:
        print("finally blocks do not run when python dies of a signal", flush=True)
    """
    plain, traced, report = run_both(tmp_path, body)
    signum = getattr(signal, signame)
    assert plain.returncode == traced.returncode == -signum
    assert traced.stdout == plain.stdout == "before\n"
    assert report["status"] == "killed" and report["ending"] == "terminated" and report["exit_code"] == -signum
    assert_kept(report)
    assert_no_leftovers(tmp_path)


@pytest.mark.parametrize("how", ["os.kill(os.getpid(), signal.SIGKILL)", "os.abort()"])
def test_faults_no_handler_sees_keep_the_sites_seen_before(tmp_path, how):
    # A new site is written when first seen: a fault right after it still finds it on disk.
    plain, traced, report = run_both(tmp_path, f"sync_here()\n{how}\n")
    assert plain.returncode == traced.returncode < 0
    assert report["status"] == "running"  # the last flush, made while the program ran
    assert_kept(report, count=1)


def test_counts_are_flushed_every_few_seconds(tmp_path):
    body = """
    end = time.monotonic() + 5
    n = 0
    while time.monotonic() < end:
        sync_here(); n += 1
    time.sleep(2.5)
    os.kill(os.getpid(), signal.SIGKILL)
    """
    plain, traced, report = run_both(tmp_path, body)
    assert plain.returncode == traced.returncode == -signal.SIGKILL
    (site,) = [s for s in report["sites"] if s["line"] == sync_line()]
    assert site["count"] > 100, site["count"]  # not just the first flush, made at the first event
    assert report["summary"]["events"] == site["count"]


@pytest.mark.gpu
@pytest.mark.parametrize("ending", ["os._exit(7)", "os.kill(os.getpid(), signal.SIGTERM)", "os.kill(os.getpid(), signal.SIGKILL)", "os.abort()"])
def test_exit_paths_on_the_gpu(tmp_path, ending):
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(PRELUDE) + f"sync_here()\n{ending}\ntime.sleep(5)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plain = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    report = tmp_path / "report.json"
    traced = subprocess.run([sys.executable, "-m", "syncscope", "run", "--device", "cuda", "--no-table", "-o", str(report), str(prog)],
                            capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert traced.returncode == plain.returncode != 0
    assert_kept(json.loads(report.read_text()))
