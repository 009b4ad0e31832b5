"""The blocking-line oracle on a real GPU (`pytest -m gpu`; bench/oracle_gpu_check.sh runs these).

- the whole catalog of anchors.md section 1: blocked on every `expect: <kind>` line, free on every
  `expect: none` line, with each available tracer;
- a C++ extension that calls cudaStreamSynchronize / cudaMemcpy itself: it really blocks, torch's
  sync-debug mode and `syncscope run` miss it, the oracle finds it and `--compare` names it;
- the Python API on a function with an event wait and a slow host line (not a wait).

With SYNCSCOPE_ORACLE_ARTIFACTS set, reports and one-line summaries are written there.
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from syncscope.oracle.tracer import available_tracers
from tests.catalog.expectations import CATALOG, expectations

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent


def artifacts(tmp_path) -> Path:
    where = os.environ.get("SYNCSCOPE_ORACLE_ARTIFACTS")
    path = Path(where) if where else tmp_path
    path.mkdir(parents=True, exist_ok=True)
    return path


def summary(tmp_path, name: str, text: str) -> None:
    (artifacts(tmp_path) / f"summary-{name}.txt").write_text(text.rstrip() + "\n")
    print(text)


def syncscope(*args, timeout=240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "syncscope", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def marks(path: Path) -> dict[str, int]:
    found = {}
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if "# L:" in text:
            found[text.split("# L:")[1].split()[0]] = number
    return found


def verdicts_for(report_path: Path, source: Path) -> dict[int, dict]:
    data = json.loads(report_path.read_text())
    wanted = source.resolve()
    out = {}
    for line in data["oracle"]["lines"]:
        if (ROOT / line["path"]).resolve() == wanted or Path(line["path"]).resolve() == wanted:
            out[line["line"]] = line
    return out


@pytest.mark.parametrize("tracer", available_tracers())
def test_oracle_agrees_with_the_whole_catalog(tmp_path, tracer):
    out = artifacts(tmp_path) / f"oracle-catalog-{tracer}.json"
    began = time.perf_counter()
    proc = syncscope(
        "oracle", "--scope", "tests.catalog.sync_catalog:run_catalog", "--tracer", tracer, "--no-source",
        "-o", str(out), "tests/catalog/sync_catalog.py",
    )
    wall = time.perf_counter() - began
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = verdicts_for(out, CATALOG)
    expected = expectations()
    source = CATALOG.read_text().splitlines()
    mismatches = []
    for number, kind in sorted(expected.items()):
        want = "blocked" if kind else "free"
        got = lines.get(number)
        if got is None or got["verdict"] != want:
            ratio = f"{got['ratio']:.2f}" if got else "-"
            mismatches.append(f"  line {number}: expected {want}, got {got['verdict'] if got else 'not run'} (ratio {ratio}): {source[number - 1].strip()}")
    blocking = [n for n, k in expected.items() if k]
    ratios = sorted(lines[n]["ratio"] for n in blocking if n in lines) or [float("nan")]
    free_ratios = sorted(lines[n]["ratio"] for n, k in expected.items() if not k and n in lines) or [float("nan")]
    data = json.loads(out.read_text())
    cost = data["oracle"]["cost"]
    text = (
        f"catalog [{data['oracle']['tracer']}]: {len(expected) - len(mismatches)}/{len(expected)} lines agree "
        f"({len(blocking)} blocking, {len(expected) - len(blocking)} free); "
        f"blocked ratios {ratios[0]:.2f}..{ratios[-1]:.2f}, free ratios max {free_ratios[-1]:.4f}; "
        f"sleep {data['oracle']['calibration']['sleep_ns'] / 1e6:.1f} ms "
        f"({(data['oracle']['calibration'].get('after_ns') or 0) / 1e6:.1f} ms after the run); measurement {cost['wall_s']:.1f} s for "
        f"{cost['line_hits']} traced line runs; whole command {wall:.1f} s"
    )
    summary(tmp_path, f"catalog-{tracer}", "\n".join([text] + mismatches))
    assert not mismatches, "\n".join(mismatches)


def test_extension_sync_is_missed_by_hooks_found_by_the_oracle_and_named_by_compare(tmp_path):
    import torch

    from syncscope.oracle.cuda import CudaGpu
    from syncscope.oracle.timing import calibrate, wait_behind_queue
    from tests.gpu_ext.sync_ext import load

    began = time.perf_counter()
    ext = load()
    build_s = time.perf_counter() - began
    x = torch.ones(1 << 16, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    assert ext.read_first(x * 3) == 3.0

    # 1. it really blocks: timed behind ~25 ms of queued work
    gpu = CudaGpu()
    cal = calibrate(gpu, time.perf_counter_ns, 25_000_000)

    def behind_queue(fn) -> float:
        return wait_behind_queue(gpu, time.perf_counter_ns, cal, fn, repeats=1)

    sync_ratio = behind_queue(lambda: ext.stream_sync(stream))
    memcpy_ratio = behind_queue(lambda: ext.read_first(x))
    free_ratio = behind_queue(lambda: x * 2)
    assert sync_ratio > 0.5 and memcpy_ratio > 0.5 and free_ratio < 0.1, (sync_ratio, memcpy_ratio, free_ratio)

    # 2. torch's sync-debug mode does not see it (and does see .item(), the control)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            # Count only sync warnings: enabling the mode itself warns that it is a prototype (and
            # since torch 2.11 that warning says "synchronizing operations" too).
            def syncs() -> int:
                return sum("called a synchronizing" in str(w.message) for w in caught)

            ext.stream_sync(stream)
            from_stream_sync = syncs()
            ext.read_first(x)
            from_ext = syncs()
            x.sum().item()
            from_item = syncs() - from_ext
        finally:
            torch.cuda.set_sync_debug_mode(0)
    seen = [f"{w.filename}:{w.lineno}: {str(w.message)[:160]}" for w in caught if "called a synchronizing" in str(w.message)]
    assert from_ext == 0 and from_item >= 1, (from_stream_sync, from_ext, from_item, seen)

    # 3. the hook-based run misses it
    demo = ROOT / "tests" / "gpu_ext" / "ext_demo.py"
    m = marks(demo)
    hook_path = artifacts(tmp_path) / "hook-ext.json"
    proc = syncscope("run", "-o", str(hook_path), "-m", "tests.gpu_ext.ext_demo")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    hook = json.loads(hook_path.read_text())
    hooked = {s["line"] for s in hook["sites"] if s["path"].endswith("gpu_ext/ext_demo.py")}
    assert m["item"] in hooked, hooked
    assert m["ext_stream_sync"] not in hooked and m["ext_memcpy"] not in hooked, hooked

    # 4. the oracle finds it, and --compare names it
    oracle_path = artifacts(tmp_path) / "oracle-ext.json"
    proc = syncscope("oracle", "--scope", "tests.gpu_ext.ext_demo:step", "--compare", str(hook_path), "-o", str(oracle_path), "-m", "tests.gpu_ext.ext_demo")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = verdicts_for(oracle_path, demo)
    got = {name: lines[m[name]]["verdict"] for name in ("free", "ext_stream_sync", "free2", "ext_memcpy", "item", "ret")}
    assert got == {"free": "free", "ext_stream_sync": "blocked", "free2": "free", "ext_memcpy": "blocked", "item": "blocked", "ret": "free"}, got
    section = json.loads(oracle_path.read_text())["oracle"]["compare"]
    assert sorted(l["line"] for l in section["blind_spots"]) == sorted([m["ext_stream_sync"], m["ext_memcpy"]])
    assert [l["line"] for l in section["agreed"]] == [m["item"]]
    assert section["hook_only"] == [] and section["hook_uncertain"] == []
    console = proc.stdout + proc.stderr
    assert "hook blind spots" in console and f"ext_demo.py:{m['ext_stream_sync']}" in console
    summary(
        tmp_path,
        "ext",
        f"extension [{ext.kind}, built/loaded in {build_s:.0f} s]: behind 25 ms of work stream_sync waited {sync_ratio:.2f}, "
        f"cudaMemcpy {memcpy_ratio:.2f}, x*2 {free_ratio:.3f} of it; sync-debug warnings from the extension: {from_ext} "
        f"(control .item(): {from_item}); syncscope run sites on demo lines {sorted(hooked)}; oracle blocked "
        f"{sorted(n for n, l in lines.items() if l['verdict'] == 'blocked')}; --compare blind spots "
        f"{sorted(l['line'] for l in section['blind_spots'])}, agreed {[l['line'] for l in section['agreed']]}",
    )


def api_step(x, torch):
    y = x @ x  # L:matmul
    time.sleep(0.03)  # L:host_sleep
    ev = torch.cuda.Event(); ev.record()  # L:record
    ev.synchronize()  # L:event_sync
    z = y.sum()  # L:sum
    return z  # L:ret


def test_api_event_wait_and_host_work(tmp_path):
    import torch

    from syncscope.oracle.api import measure_function

    x = torch.randn(256, 256, device="cuda")
    measured = measure_function(api_step, x, torch)
    lines, start = inspect.getsourcelines(api_step)
    m = {t.split("# L:")[1].split()[0]: start + i for i, t in enumerate(lines) if "# L:" in t}
    v = measured.verdicts()
    summary(tmp_path, "api", "api: " + ", ".join(f"{name}={v.get(line, 'not run')}" for name, line in m.items()))
    assert v[m["matmul"]] == "free"
    assert v[m["host_sleep"]] == "free", "30 ms on the host, as long on an idle GPU: not a wait"
    assert v[m["record"]] == "free"
    assert v[m["event_sync"]] == "blocked", "an event recorded behind the queue, waited for on the next line"
    assert v[m["sum"]] == "free" and v[m["ret"]] == "free"
