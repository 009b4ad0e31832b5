"""No aborts on the simulated device: every public `torch.cuda` callable and every `torch.*`
function called with `device="cuda"` either works, fails on its arguments as torch would, or
raises `SimulatedDeviceError` naming the call and a way out. None kills the process in C++, and
none lets a raw "this build has no CUDA" error reach the program."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from syncscope.runtime.sim.cuda_guard import _NO_CUDA

ROOT = Path(__file__).resolve().parents[1]


def _walk(tmp_path: Path) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
    log = tmp_path / "walk.log"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "sim_entry_walk.py"), str(log)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    rows = [line.rstrip("\n").split("\t") for line in log.read_text().splitlines()] if log.exists() else []
    return proc, rows


@pytest.mark.skipif(torch.backends.cuda.is_built(), reason="walks a CPU-only build; on a CUDA build the "
                    "unsimulated calls would reach a real driver with made-up arguments")
def test_no_entry_point_aborts_or_leaks_a_no_cuda_error(tmp_path):
    proc, rows = _walk(tmp_path)
    started = [r for r in rows if r[0] == "START"]
    ended = [r for r in rows if r[0] == "END"]
    last = started[-1][1] if started else "?"
    assert proc.returncode == 0 and "walk done" in proc.stdout, (
        f"the walk died (status {proc.returncode}) in {last}: {proc.stderr[-2000:]}"
    )
    assert len(started) == len(ended) > 1000
    names = {r[1] for r in ended}
    for expected in ("torch.cuda.manual_seed_all", "torch.cuda.CUDAGraph", "torch.cuda.memory.memory_stats",
                     "torch.cuda.random.get_rng_state", "torch.zeros", "torch.randn"):
        assert expected in names
    leaks = sorted(
        {f"{name}: {kind}: {message}" for _, name, is_class, kind, message in ended
         if is_class == "False" and kind not in ("ok", "SimulatedDeviceError") and any(m in message for m in _NO_CUDA)}
    )
    assert not leaks, "\n".join(leaks)
    named = [message for _, name, _c, kind, message in ended if kind == "SimulatedDeviceError"]
    assert named and all("syncscope simulated CUDA device" in m and "--device cuda" in m for m in named)
