"""Loop a fork + `Pool` program under `syncscope run --device sim` and catch a hang in the act.

The program is tests/test_multiprocess.py's (children, then a `Pool(2)` that `__exit__`
terminates). Each run gets pipes for stdout and stderr, as pytest gives it, so a process left
behind also shows as a hang. On the first run that does not end within `--timeout`, every process
of the run (found by its working directory) is dumped with py-spy, with its signal masks, and the
loop stops. This is how the SIGTERM race of docs/runtime.md was caught; run it beside some CPU
load (`sh -c 'while :; do :; done' &`, twice) to widen the window.

    python bench/pool_terminate_loop.py --runs 200 [--method fork] [--timeout 40]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
import test_multiprocess  # noqa: E402  (the program and the launch line the test uses)


def processes_in(directory: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.readlink(f"/proc/{entry}/cwd") == directory:
                    found.append(int(entry))
            except OSError:
                pass
    return found


def dump(pid: int) -> None:
    print(f"--- pid {pid}", flush=True)
    py_spy = shutil.which("py-spy")
    if py_spy:
        subprocess.run([py_spy, "dump", "--pid", str(pid)])
    else:
        print("(py-spy not installed: pip install py-spy)")
    try:
        with open(f"/proc/{pid}/status") as fh:
            print("".join(line for line in fh if line.startswith(("PPid", "SigPnd", "ShdPnd", "SigBlk", "SigCgt"))), flush=True)
    except OSError:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--method", default="fork", choices=["fork", "spawn", "forkserver"])
    parser.add_argument("--timeout", type=float, default=40.0)
    args = parser.parse_args()
    for run in range(1, args.runs + 1):
        directory = tempfile.mkdtemp(prefix="pool-loop-")
        with open(os.path.join(directory, "prog.py"), "w") as fh:
            fh.write(test_multiprocess.PROGRAM)
        command = [sys.executable, "-c", test_multiprocess.LAUNCH, "run", "--device", "sim", "--no-table",
                   "-o", "out/syncscope-report.json", "prog.py", args.method]
        started = time.monotonic()
        proc = subprocess.Popen(command, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _, err = proc.communicate(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"run {run}: HANG (the parent {'is still running' if proc.poll() is None else 'has ended'})", flush=True)
            for pid in processes_in(directory):
                dump(pid)
            for pid in processes_in(directory):
                os.kill(pid, 9)
            return 1
        print(f"run {run}: exit {proc.returncode} in {time.monotonic() - started:.1f} s", flush=True)
        if proc.returncode != 0:
            print(err[-2000:])
            return 1
        shutil.rmtree(directory, ignore_errors=True)
    print(f"{args.runs} runs, no hang")
    return 0


if __name__ == "__main__":
    sys.exit(main())
