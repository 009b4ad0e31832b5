"""The runtime trap on a real GPU (run on the device machine: `pytest -m gpu`)."""

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.catalog.expectations import CATALOG, expectations

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent


def _catalog_pairs(events):
    catalog = CATALOG.resolve().as_posix()
    return {
        (e.site.line, e.kind)
        for e in events
        if Path(e.site.path).resolve().as_posix() == catalog or e.site.path.endswith("tests/catalog/sync_catalog.py")
    }


def test_catalog_on_cuda_matches_expectations():
    import syncscope
    from tests.catalog.sync_catalog import run_catalog

    run_catalog("cuda")  # warm-up: lazy CUDA init, kernels loaded, outside the trap
    with syncscope.trap(device="cuda") as t:
        run_catalog("cuda")
    expected = {(line, kind) for line, kind in expectations().items() if kind}
    assert _catalog_pairs(t.events) == expected


# What the quiet detector (Python 3.12+, runtime/quiet_cuda.py) leaves unwrapped: the first sync
# at each of their instructions is recorded without a time, every later one timed.
UNWRAPPED = {"Tensor.__getitem__", "Tensor.__setitem__"}


@pytest.mark.parametrize("shims", ["quiet", "all shims"])
def test_catalog_blocked_times_are_measured(monkeypatch, shims):
    import syncscope
    from syncscope.runtime import site_timer
    from tests.catalog.sync_catalog import run_catalog

    if shims == "all shims":
        monkeypatch.setenv("SYNCSCOPE_CUDA_SHIMS", "1")
    with syncscope.trap(device="cuda") as t:
        run_catalog("cuda")
        first = len(t.events)
        run_catalog("cuda")
    quiet = shims == "quiet" and site_timer.AVAILABLE
    untimed = [e for e in t.events[:first] if e.blocked_ns is None]
    assert t.events[first:] and all(e.blocked_ns is not None and e.blocked_ns > 0 for e in t.events[first:])
    assert all(e.blocked_ns > 0 for e in t.events[:first] if e.blocked_ns is not None)
    if quiet:
        assert untimed and {e.api for e in untimed} <= UNWRAPPED, {(e.api, e.site.line) for e in untimed}
    else:
        assert untimed == []


def _queue_gpu_work(ms: float):
    import torch

    # Calibrate cycles to wall time once per call; _sleep spins on the GPU without memory traffic.
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    cycles_per_ms = 10_000_000 / start.elapsed_time(end)
    torch.cuda._sleep(int(cycles_per_ms * ms))


def test_blocked_time_of_a_bool_mask_gather_is_the_wait():
    import torch

    import syncscope

    x = torch.randn(1 << 20, device="cuda")
    mask = x > 0
    x[mask]
    torch.cuda.synchronize()
    # The wait measured independently: the same gather, same queue, host clock around it.
    _queue_gpu_work(25)
    t0 = time.perf_counter_ns()
    x[mask]
    independent = time.perf_counter_ns() - t0
    torch.cuda.synchronize()
    with syncscope.trap(device="cuda") as t:
        for _ in range(2):  # the quiet detector times an unwrapped sync from its second run on
            _queue_gpu_work(25)
            x[mask]
    events = [e for e in t.events if e.kind == "bool_mask_index"]
    assert len(events) == 2 and len({e.site.line for e in events}) == 1
    assert independent > 20e6
    assert events[-1].blocked_ns >= 0.8 * independent, (events[-1].blocked_ns, independent)
    assert events[0].blocked_ns is None or events[0].blocked_ns >= 0.8 * independent


def test_background_thread_keeps_working_while_main_thread_is_trapped():
    import torch

    import syncscope

    stop = threading.Event()
    done = []

    def worker():
        y = torch.ones(1024, device="cuda")
        while not stop.is_set():
            done.append(float(y.sum()))  # syncs, on a thread outside every region

    thread = threading.Thread(target=worker, name="background")
    with syncscope.trap(device="cuda") as t:
        thread.start()
        with syncscope.region("decode_step"):
            x = torch.ones(8, device="cuda")
            for _ in range(50):
                x.sum().item()
        time.sleep(0.05)
        stop.set()
        thread.join()
    assert len(done) > 0
    main = [e for e in t.events if e.thread == "MainThread"]
    background = [e for e in t.events if e.thread == "background"]
    assert len(main) == 50 and all(e.in_scope and e.region == "decode_step" for e in main)
    assert background and not any(e.in_scope for e in background)


def test_forbid_syncs_raises_at_the_line():
    import torch

    import syncscope

    x = torch.ones(4, device="cuda")
    with pytest.raises(syncscope.HostSyncError) as info:
        with syncscope.forbid_syncs():
            y = x * 2
            y.tolist()
    assert info.value.kind == "tolist"
    assert "y.tolist()" in str(info.value)


def _run_cli(tmp_path, script_text, *extra):
    script = tmp_path / "prog.py"
    script.write_text(script_text)
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "cuda", "-o", str(report), *extra, str(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    return proc, (json.loads(report.read_text()) if report.exists() else None)


COMPILE_AND_GRAPH = """
import torch
import torch._dynamo

def step(x, w):
    # Calls syncscope shims (tensor-index gather, basic slice, .to, torch.where, repeat_interleave
    # with output_size): Dynamo must trace through them without a graph break.
    idx = torch.arange(0, x.shape[0], 2, device=x.device)
    h = torch.relu(x[idx] @ w)[:, 1:].to(torch.float32)
    h = torch.where(h > 0, h, torch.zeros_like(h))
    reps = torch.full((h.shape[0],), 2, device=x.device)
    return torch.repeat_interleave(h, reps, dim=0, output_size=2 * h.shape[0]).sum(dim=-1)

x = torch.randn(64, 64, device="cuda")
w = torch.randn(64, 64, device="cuda")
torch._dynamo.reset()
compiled = torch.compile(step, fullgraph=True)
eager = step(x, w)
out = compiled(x, w)
explanation = torch._dynamo.explain(step)(x, w)
torch.cuda.synchronize()
assert torch.allclose(out, eager, atol=1e-4), "compiled output differs"
print("graph_breaks", explanation.graph_break_count)

static_x = x.clone()
s = torch.cuda.Stream()
s.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(s):
    for _ in range(3):
        step(static_x, w)
torch.cuda.current_stream().wait_stream(s)
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):
    static_out = step(static_x, w)
static_x.copy_(x * 2)
graph.replay()
torch.cuda.synchronize()
assert torch.allclose(static_out, step(x * 2, w), atol=1e-4), "graph replay differs"
print("graph ok")
"""


def test_torch_compile_and_cuda_graph_under_syncscope_run(tmp_path):
    proc, report = _run_cli(tmp_path, COMPILE_AND_GRAPH)
    assert proc.returncode == 0, proc.stderr
    assert "graph_breaks 0" in proc.stdout
    assert "graph ok" in proc.stdout
    assert report["status"] == "completed"


def test_policy_error_exits_with_the_line(tmp_path):
    proc, report = _run_cli(
        tmp_path,
        "import torch\nx = torch.ones(3, device='cuda')\nprint('before')\nx.sum().item()\nprint('after')\n",
        "--policy",
        "error",
    )
    assert proc.returncode == 1
    assert "before" in proc.stdout and "after" not in proc.stdout
    assert "HostSyncError" in proc.stderr and "prog.py:4" in proc.stderr
    assert "syncscope/runtime" not in proc.stderr  # traceback without syncscope frames
    assert report["status"] == "failed" and report["ending"] == "exception"


def test_cuda_only_example_behaves_as_under_plain_python_and_matches_the_simulated_device(tmp_path):
    """Same stdout and stderr as plain python on the GPU; the same (line, kind) set as the
    simulated device reports on a CPU, less the race hazard only the simulated device can see."""
    example = ROOT / "examples" / "cuda_only.py"
    plain = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    report = tmp_path / "r.json"
    traced = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "cuda", "--no-table", "-o", str(report), str(example)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert plain.returncode == traced.returncode == 0, traced.stderr
    assert traced.stdout == plain.stdout
    assert traced.stderr.rsplit("syncscope: report ", 1)[0] == plain.stderr  # --no-table's last line names the report
    import re

    marker = re.compile(r"#\s*sync:\s*([a-z0-9_]+)\s*$")
    marked = {
        (number, found.group(1))
        for number, text in enumerate(example.read_text().splitlines(), start=1)
        if (found := marker.search(text))
    }
    seen = {(s["line"], s["kind"]) for s in json.loads(report.read_text())["sites"]}
    assert seen == {m for m in marked if m[1] != "unsynced_d2h_read"}, (seen, marked)
