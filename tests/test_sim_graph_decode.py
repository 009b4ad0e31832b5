"""examples/graph_decode.py (a decode step captured in a CUDA graph under bf16 autocast, replayed
with a sampler) under `syncscope run --device sim` on a machine with no GPU: the tokens plain
CPU python prints, and exactly the sites its `# sync:` comments name; with `--plant-sync`, the
sync inside the capture is refused and reported as `sync_in_capture` at its line. The GPU half
is tests/test_gpu_graph_decode.py."""

from __future__ import annotations

import torch

from tests.graph_decode_support import line_of, marked, run, sites


def test_graph_decode_on_the_simulated_device_prints_plain_cpus_tokens(tmp_path):
    if torch.cuda.is_available():
        import pytest

        pytest.skip("plain python takes the GPU path here; the GPU half compares with the GPU")
    plain, _ = run(tmp_path)
    assert plain.returncode == 0, plain.stderr[-3000:]
    simulated, data = run(tmp_path, device="sim")
    assert simulated.returncode == 0, simulated.stderr[-3000:]
    assert simulated.stdout == plain.stdout and len(plain.stdout.split()) >= 4
    assert sites(data) == marked("sync")


def test_a_sync_planted_inside_the_capture_is_reported_at_its_line(tmp_path):
    proc, data = run(tmp_path, "--plant-sync", device="sim")
    assert proc.returncode != 0  # the capture is refused, as on a GPU
    assert "operation not permitted when stream is capturing" in proc.stderr
    (refused,) = [s for s in data["sites"] if s["kind"] == "sync_in_capture"]
    assert {(refused["path"], refused["line"], refused["kind"])} == marked("planted")
    assert refused["related"]["line"] == line_of("with torch.cuda.graph(graph):")
