"""The GPU half of examples/graph_decode.py's parity (run on the device machine: `pytest -m gpu`):
under `syncscope run --device cuda` it prints plain python's tokens and reports the same
(path, line, kind) set as `--device sim`; with `--plant-sync` CUDA refuses the capture and the
GPU detector names the `.item()` line (kind `sync_in_capture`, related = the capture's `with`),
not the `with` line. Also the same refusal through `syncscope.trap` (in a child process)."""

from __future__ import annotations

import os

import pytest

from tests.graph_decode_support import line_of, marked, run, sites

pytestmark = pytest.mark.gpu
HERE = os.path.basename(__file__)


def test_graph_decode_on_the_gpu_matches_plain_python_and_the_simulated_device(tmp_path):
    plain, _ = run(tmp_path)
    assert plain.returncode == 0, plain.stderr[-3000:]
    on_gpu, gpu_data = run(tmp_path, device="cuda")
    assert on_gpu.returncode == 0, on_gpu.stderr[-3000:]
    assert on_gpu.stdout == plain.stdout
    simulated, sim_data = run(tmp_path, device="sim")
    assert simulated.returncode == 0, simulated.stderr[-3000:]
    assert sites(gpu_data) == sites(sim_data) == marked("sync")


def test_planted_sync_in_capture_is_named_at_its_line_on_the_gpu(tmp_path):
    proc, data = run(tmp_path, "--plant-sync", device="cuda")
    assert proc.returncode != 0
    refused = [s for s in data["sites"] if s["kind"] == "sync_in_capture"]
    assert {(s["path"], s["line"], s["kind"]) for s in refused} == marked("planted")
    assert refused[0]["related"]["line"] == line_of("with torch.cuda.graph(graph):")
    _, sim_data = run(tmp_path, "--plant-sync", device="sim")
    assert {x for x in sites(data) if x[2] == "sync_in_capture"} == {x for x in sites(sim_data) if x[2] == "sync_in_capture"}


CAPTURE_SCRIPT = """
import json, torch, syncscope
x = torch.ones(8, device="cuda")
torch.cuda.synchronize()
g = torch.cuda.CUDAGraph()
refused = False
with syncscope.trap(device="cuda") as t:
    try:
        with torch.cuda.graph(g):  # capture begins: line 8
            y = x * 2
            y.sum().item()  # the sync: line 10
    except RuntimeError:
        refused = True
torch.cuda.synchronize()
mine = [e for e in t.events if e.site.path.endswith("capture.py") and e.kind == "sync_in_capture"]
print(json.dumps({"refused": refused, "sites": [[e.site.line, e.api, e.related.line if e.related else None] for e in mine]}))
"""


def test_trap_names_the_item_inside_a_refused_capture(tmp_path):
    # In a child process: after a capture CUDA refused, the process's CUDA generator stays in
    # capture state (seen on the H100, torch 2.11: every later torch.randn in the pytest process
    # raised "Offset increment outside graph capture"), which broke every GPU test after this one.
    import json
    import subprocess
    import sys

    script = tmp_path / "capture.py"
    script.write_text(CAPTURE_SCRIPT.lstrip("\n"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"refused": True, "sites": [[10, "Tensor.item", 8]]}
