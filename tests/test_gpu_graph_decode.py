"""The GPU half of examples/graph_decode.py's parity (run on the device machine: `pytest -m gpu`):
under `syncscope run --device cuda` it prints plain python's tokens and reports the same
(path, line, kind) set as `--device sim`; with `--plant-sync` CUDA refuses the capture and the
GPU detector names the `.item()` line (kind `sync_in_capture`, related = the capture's `with`),
not the `with` line. Also the same refusal in-process, through `syncscope.trap`."""

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


def _line(marker: str) -> int:
    with open(__file__) as f:
        for number, text in enumerate(f, start=1):
            if text.rstrip().endswith(f"# {marker}"):
                return number
    raise AssertionError(marker)


def test_trap_names_the_item_inside_a_refused_capture():
    import torch

    import syncscope

    x = torch.ones(8, device="cuda")
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with syncscope.trap(device="cuda") as t:
        with pytest.raises(RuntimeError):
            with torch.cuda.graph(g):  # gpu-capture-begins
                y = x * 2
                y.sum().item()  # gpu-item-in-capture
    torch.cuda.synchronize()
    mine = [e for e in t.events if os.path.basename(e.site.path) == HERE and e.kind == "sync_in_capture"]
    assert [(e.site.line, e.api) for e in mine] == [(_line("gpu-item-in-capture"), "Tensor.item")]
    assert mine[0].related is not None and mine[0].related.line == _line("gpu-capture-begins")
