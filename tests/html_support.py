"""Reports for the HTML page tests, built from real source files the way a run builds them
(`build_report` over `HostSyncEvent`s, the oracle's own report writer), plus the real runs of
`syncscope run` and `syncscope combine` on the simulated device."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from syncscope.report.aggregate import build_report
from syncscope.events import Frame, HostSyncEvent
from test_gate_support import sync_lines

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GPU_SOURCE = '''\
import torch


def prepare(lens):
    total = lens.sum().item()
    return total


class Builder:
    def build(self, lens, mask):
        n = prepare(lens)
        rows = mask.nonzero()
        first = rows[0].item()
        torch.cuda.synchronize()
        return n + first
'''

# (line, kind, events, blocked ns per event) of GPU_SOURCE, as a GPU run measures them
GPU_SITES = [(5, "item", 40, 90_000), (12, "nonzero", 40, 35_000), (13, "item", 40, 2_000), (14, "device_sync", 4, 1_500_000)]


def _enclosing(source: str) -> dict[int, str]:
    return {line: function for line, function, _ in sync_lines(source, needle="")}


def _event(path, line, function, text, kind, *, ts, blocked=None, stack=(), thread="MainThread", pid=4242, region=None,
           in_scope=True, allowed=False, api="torch") -> HostSyncEvent:
    frame = Frame(path, line, function)
    return HostSyncEvent(kind=kind, api=api, site=frame, source=text, stack=(frame, *stack), thread=thread, pid=pid,
                         region=region, in_scope=in_scope, allowed=allowed, blocked_ns=blocked, ts_ns=ts)


def gpu_report(root: str) -> dict:
    """The report a GPU run of GPU_SOURCE would write: device cuda, measured blocked times."""
    with open(os.path.join(root, "builder.py"), "w", encoding="utf-8") as fh:
        fh.write(GPU_SOURCE)
    lines = GPU_SOURCE.splitlines()
    owner = _enclosing(GPU_SOURCE)
    events, ts = [], 0
    for step in range(40):
        for line, kind, count, blocked in GPU_SITES:
            if step < count:
                ts += 250_000
                stack = (Frame("builder.py", 11, "Builder.build"),) if line == 5 else ()
                events.append(_event("builder.py", line, owner[line], lines[line - 1].strip(), kind, ts=ts, blocked=blocked,
                                     stack=stack, region="decode_step"))
    meta = {"tool": {"name": "syncscope", "version": "0.1.0"}, "created": "2026-11-23T00:00:00+00:00", "device": "cuda",
            "gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0", "python": "3.12.3", "host": "gpu1", "pid": 4242, "rank": None,
            "command": ["serve.py", "--impl", "naive"], "project_root": root, "exit_code": 0, "status": "ok", "error": None}
    return build_report(events, meta).to_json()


def many_sites_report(root: str, sites: int = 5000, per_function: int = 5) -> dict:
    """`sites` distinct sync sites in a real file (`per_function` per function), 2-4 events each."""
    body = []
    for f in range(sites // per_function):
        body.append(f"def step_{f}(x):")
        body += [f"    v{k} = x[{k}].item()  # sync {f}.{k}" for k in range(per_function)]
        body.append("")
    text = "\n".join(body) + "\n"
    with open(os.path.join(root, "many.py"), "w", encoding="utf-8") as fh:
        fh.write(text)
    lines = text.splitlines()
    events, ts = [], 0
    for n, (line, function, stripped) in enumerate(sync_lines(text)):
        for _ in range(2 + n % 3):
            ts += 10_000
            events.append(_event("many.py", line, function, stripped, "item", ts=ts, blocked=1000 + (n * 7919) % 50_000,
                                 thread=f"worker-{n % 4}"))
    assert len(lines) > sites
    meta = {"device": "cuda", "gpu": "NVIDIA H100", "command": ["many.py"], "project_root": root, "pid": 1, "host": "h"}
    return build_report(events, meta).to_json()


HOSTILE = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
HOSTILE_DIR = 'evil"\'<b></script>dir'  # directory names with quotes and markup (the "/" nests one)


def hostile_report(root: str) -> dict:
    """A report whose path, function, source line, kind, region, API and command hold markup and
    quotes, with the file really there (so the source view reads it too)."""
    folder = os.path.join(root, HOSTILE_DIR)
    os.makedirs(folder, exist_ok=True)
    name = "m<i>'\".py"
    source = f"def f(x):\n    s = '''{HOSTILE}'''\n    return x.item()  # '<i>\"\n"
    with open(os.path.join(folder, name), "w", encoding="utf-8") as fh:
        fh.write(source)
    path = f"{HOSTILE_DIR}/{name}"
    lines = source.splitlines()
    events = [
        _event(path, 3, f"f{HOSTILE}", lines[2].strip(), f"item{HOSTILE}", ts=1000, region=HOSTILE, api=HOSTILE, thread=HOSTILE),
        _event(path, 2, "f", lines[1].strip(), "tolist", ts=2000, blocked=None),
    ]
    meta = {"device": f"sim{HOSTILE}", "command": ["x.py", HOSTILE], "project_root": root, "pid": 7, "host": HOSTILE,
            "status": "exception", "error": f"ValueError: {HOSTILE}", "exit_code": 1}
    return build_report(events, meta).to_json()


ORACLE_SOURCE = "def step(x):\n    a = x + 1\n    b = a.item()\n    c = ext_sync(a)\n    return b, c\n"


def oracle_report(root: str) -> dict:
    """An oracle report as `syncscope oracle` writes it (its own writer), from timed passes of
    ORACLE_SOURCE's lines: 3 and 4 waited behind the queue, 2 and 5 did not."""
    from syncscope.oracle import verdict as V
    from syncscope.oracle.report import build_oracle_report, oracle_section
    from syncscope.oracle.measure import CallSample, FunctionId, PassRecord

    src = os.path.join(root, "prog.py")
    with open(src, "w", encoding="utf-8") as fh:
        fh.write(ORACLE_SOURCE)
    ms = 1_000_000
    sample = CallSample(FunctionId(src, "step", 1, "prog:step"))
    queued, idle = PassRecord("queued"), PassRecord("idle")
    for line, host in ((2, 100), (3, 20 * ms), (4, 21 * ms), (5, 100)):
        queued.add(line, host, 20 * ms)
        idle.add(line, 60, 0)
    sample.queued.append(queued)
    sample.idle.append(idle)
    results = V.analyse([sample])
    section = oracle_section(results, root, calibration={"device": "NVIDIA H100", "cycles": 1, "sleep_ns": 25 * ms},
                             thresholds=V.Thresholds(), settings={"repeat": 1}, cost={})
    meta = {"device": "cuda", "gpu": "NVIDIA H100", "command": ["prog.py"], "project_root": root, "pid": 9, "host": "g",
            "tool": {"name": "syncscope", "version": "0.1.0", "mode": "oracle"}}
    return build_oracle_report(results, meta, root, section).to_json()


def write_json(path: str, data) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    return path


def syncscope(*args: str, cwd: str = REPO, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env or {})}
    done = subprocess.run([sys.executable, "-m", "syncscope", *args], cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError(f"syncscope {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


THREADED = '''\
import sys
import threading

import torch

x = torch.arange(8, device="cuda")


def work(n):
    for _ in range(n):
        (x > 3).sum().item()


worker = threading.Thread(target=work, args=(3,), name="loader")
worker.start()
worker.join()
work(int(sys.argv[1]))
if len(sys.argv) > 2:
    x.tolist()
'''

NO_SYNC = 'import torch\n\nx = torch.ones(4, device="cuda")\ny = (x + 1) * 2\n'
