"""Every feature the simulated device does not simulate is on one list
(syncscope/runtime/sim/unsupported.py, and the same list in docs/simulated-device.md), and each
entry's example raises `SimulatedDeviceError` naming the feature and a way out: walked in a child
process, which must finish (no C++ abort). The refusals leave the host paths next to them alone."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import syncscope
from syncscope.runtime.sim import SimulatedDeviceError
from syncscope.runtime.sim.unsupported import UNSIMULATED

ROOT = Path(__file__).resolve().parents[1]


def _walk(tmp_path: Path):
    log = tmp_path / "walk.log"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "sim_unsupported_walk.py"), str(log)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    rows = [line.rstrip("\n").split("\t") for line in log.read_text().splitlines()] if log.exists() else []
    return proc, rows


@pytest.mark.skipif(torch.backends.cuda.is_built(), reason="walks a CPU-only build; on a CUDA build some "
                    "examples would reach a real driver")
def test_every_unsimulated_feature_raises_a_named_error_with_a_way_out(tmp_path):
    proc, rows = _walk(tmp_path)
    started = [r for r in rows if r[0] == "START"]
    ended = {int(r[1]): (r[2], r[3]) for r in rows if r[0] == "END"}
    last = UNSIMULATED[int(started[-1][1])].example if started else "?"
    assert proc.returncode == 0 and "walk done" in proc.stdout, (
        f"the walk died (status {proc.returncode}) at {last!r}: {proc.stderr[-2000:]}"
    )
    assert sorted(ended) == list(range(len(UNSIMULATED)))
    wrong = []
    for index, entry in enumerate(UNSIMULATED):
        kind, text = ended[index]
        named = kind == "SimulatedDeviceError" and entry.feature in text and "--device cuda" in text
        if entry.refused_by == "here":
            named = named and entry.way_out in text and "is_simulated()" in text
        if not named:
            wrong.append(f"{entry.example}: {kind}: {text[:300]}")
    assert not wrong, "\n".join(wrong)


def test_the_docs_list_every_unsimulated_feature():
    docs = (ROOT / "docs" / "simulated-device.md").read_text()
    missing = sorted({e.feature for e in UNSIMULATED if f"`{e.feature}`" not in docs and e.feature not in docs})
    assert not missing, missing


def test_each_entry_is_refused_one_of_three_ways():
    assert {e.refused_by for e in UNSIMULATED} == {"here", "dispatch", "guard"}
    assert len({e.example for e in UNSIMULATED}) == len(UNSIMULATED)


def test_the_refusals_leave_host_paths_and_simulated_neighbours_alone():
    with syncscope.trap(device="sim"):
        x = torch.ones(3, device="cuda")
        assert x.untyped_storage().nbytes() == 12  # simulated: only TypedStorage is refused
        assert torch.ones(2).storage().size() == 2
        buffer = io.BytesIO()
        torch.save({"w": torch.arange(3)}, buffer)
        buffer.seek(0)
        assert torch.equal(torch.load(buffer, map_location="cpu")["w"], torch.arange(3))
        assert torch.equal(torch.from_dlpack(torch.arange(4)), torch.arange(4))
        assert torch.cuda.nccl.is_available([x]) is False
        with pytest.raises(SimulatedDeviceError):
            torch.save(x, io.BytesIO())
        assert isinstance(torch.cuda.FloatStorage, type)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            y = x * 2
        g.replay()
        assert torch.equal(y.cpu(), torch.full((3,), 2.0))
    assert torch.load is not None and torch.cuda.FloatStorage.__module__.startswith("torch")
