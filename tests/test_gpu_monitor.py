"""Monitor mode on a real GPU (run on the device machine: `pytest -m gpu tests/test_gpu_monitor.py`)."""

from __future__ import annotations

import glob
import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env():
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return env


PROGRAM = textwrap.dedent(
    """
    import json, sys, urllib.request
    import torch
    import syncscope

    x = torch.ones(256, 256, device="cuda")
    plain_item = torch.Tensor.item
    mon = syncscope.monitor(sample=0.3, sample_run=int(sys.argv[2]), port=int(sys.argv[1]), device="cuda", seed=3)
    gate = mon.session.gate
    sampled, shimmed, shimmed_after = [], [], []
    for i in range(200):
        with syncscope.region("step"):
            sampled.append(gate.armed_here())
            shimmed.append(torch.Tensor.item is not plain_item)
            torch.cuda._sleep(200_000)  # queued work, so the read below waits for it
            (x @ x).sum().item()
        shimmed_after.append(torch.Tensor.item is not plain_item)
    page = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics").read().decode()
    events = list(mon.trap.events)
    counts = mon.session.gate.counts
    arms = mon.trap.detector.arms
    mon.stop()
    values = {line.split(" ")[0]: float(line.split(" ")[1]) for line in page.splitlines() if line and not line.startswith("#")}
    print(json.dumps({"sampled": sampled, "shimmed": shimmed, "shimmed_after": shimmed_after, "regions": counts.regions,
                      "sampled_regions": counts.sampled, "arms": arms, "events": len(events),
                      "measured": sum(e.blocked_ns is not None and e.blocked_ns > 0 for e in events), "metrics": values}))
    """
)


@pytest.mark.parametrize("run_length", [1, 4])
def test_the_detector_is_installed_only_for_runs_of_sampled_regions_and_waits_are_measured(tmp_path, run_length):
    (tmp_path / "prog.py").write_text(PROGRAM)
    run = subprocess.run([sys.executable, "prog.py", str(_free_port()), str(run_length)], cwd=tmp_path, env=_env(),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.splitlines()[-1])
    sampled = out["sampled"]
    n = sum(sampled)
    assert out["regions"] == 200 and out["sampled_regions"] == n and 30 < n < 90
    assert out["shimmed"] == sampled  # the detector is in for every sampled step and no other
    # Installed once per stretch of sampled steps, and still in after a step only when the next
    # step is sampled too (inside a run); with runs of 1, never between steps.
    stretches = sum(1 for i, s in enumerate(sampled) if s and (i == 0 or not sampled[i - 1]))
    assert out["arms"] == stretches
    assert out["shimmed_after"][:-1] == [a and b for a, b in zip(sampled, sampled[1:])]
    # Runs of 1 at rate 0.3: ~70% of sampled steps start a stretch; runs of 4: at most a quarter.
    assert stretches > n / 2 if run_length == 1 else stretches <= n / 4
    assert out["events"] == n == out["measured"]  # one timed .item() per sampled step
    syncs = {k: v for k, v in out["metrics"].items() if k.startswith("syncscope_host_syncs_total{")}
    assert list(syncs.values()) == [n]
    assert out["metrics"]["syncscope_host_sync_blocked_seconds_per_sync_count"] == n
    blocked = [v for k, v in out["metrics"].items() if k.startswith("syncscope_host_sync_blocked_seconds_total{")]
    assert blocked and blocked[0] > 0


def test_serve_workers_under_monitor_on_cuda(tmp_path):
    run = subprocess.run(
        # Runs of 1, so every process samples some of its regions (runs of 8 can miss a short one).
        [sys.executable, "-m", "syncscope", "run", "--monitor", "--sample", "0.5", "--sample-run", "1", "--device", "cuda",
         "--metrics-port", str(_free_port()), "--no-table", "-o", "out/r.json",
         os.path.join(REPO, "examples", "serve_workers.py"), "--batches", "6", "--steps", "10"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    reports = [json.load(open(p)) for p in glob.glob(str(tmp_path / "out" / "*.json"))]
    assert len(reports) == 3 and all(r["sampled"] and r["device"] == "cuda" for r in reports)
    kinds = {s["kind"] for r in reports for s in r["sites"]}
    assert {"tolist", "device_sync"} <= kinds, kinds


def test_arming_and_disarming_the_detector_never_waits_for_the_gpu():
    # A sampled step installs the detector at its region's entry and takes it out at its exit;
    # neither may wait for the GPU (syncscope must add no sync of its own). Timed behind ~10 ms of
    # queued work: a call that waits takes most of it.
    import time

    from syncscope.monitoring.trap import _SwitchedDetector
    from syncscope.oracle.cuda import CudaGpu
    from syncscope.oracle.timing import calibrate, wait_behind_queue
    from syncscope.runtime.recorder import Recorder

    switched = _SwitchedDetector("cuda", Recorder(device="cuda"))
    switched.arm()
    switched.disarm()  # the first install builds the shims: not what a sampled step pays
    gpu = CudaGpu()
    calibration = calibrate(gpu, time.perf_counter_ns, 10_000_000)
    waited = wait_behind_queue(gpu, time.perf_counter_ns, calibration, lambda: (switched.arm(), switched.disarm()))
    assert waited < 0.3, waited
