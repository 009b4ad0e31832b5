"""Two GPUs, NCCL: torch's C++ sync warnings from c10d (a blocking barrier, the process group's
teardown) do not leak into the program's stderr under `syncscope run`, and the barrier's wait is
recorded instead. Run on a machine with 2 GPUs: `pytest -m gpu tests/test_gpu_nccl_teardown.py`.

The control run is the same program under plain torchrun with torch's sync-debug mode switched on
by the program itself (what the detector does): its stderr must show the warning, or this torch
no longer prints one there and the check below proves nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent
LEAK = "called a synchronizing CUDA operation"

PROGRAM = """
import os, sys
import torch
import torch.distributed as dist

if "--debug-mode-warn" in sys.argv:
    torch.cuda.set_sync_debug_mode("warn")
rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl")
x = torch.full((1024,), float(rank + 1), device="cuda")
dist.all_reduce(x)
total = x[0].item()                                  # line 13: an ordinary sync, recorded
dist.barrier()                                       # line 14: NCCL barrier syncs the stream in C++
dist.destroy_process_group()                         # line 15: teardown
print(f"rank {rank}: {total}", flush=True)
"""


def _torchrun(tmp_path, *command: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", *command],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300,
    )


def test_nccl_barrier_and_teardown_leave_stderr_clean(tmp_path):
    import torch

    if torch.cuda.device_count() < 2 or not torch.distributed.is_nccl_available():
        pytest.skip("needs 2 CUDA devices and NCCL")
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))

    control = _torchrun(tmp_path, "prog.py", "--debug-mode-warn")
    assert control.returncode == 0, control.stderr
    traced = _torchrun(tmp_path, "-m", "syncscope", "run", "--device", "cuda", "--no-table", "-o", str(tmp_path / "r.json"), "prog.py")
    assert traced.returncode == 0, traced.stderr
    assert sorted(traced.stdout.splitlines()) == sorted(control.stdout.splitlines()) == ["rank 0: 3.0", "rank 1: 3.0"]

    assert LEAK not in traced.stderr, f"sync warnings leaked under syncscope run:\n{traced.stderr}"
    assert LEAK in control.stderr, (
        "plain torchrun with the sync-debug mode on printed no sync warning at the barrier or teardown: "
        f"this torch no longer leaks one, so the check above shows nothing. stderr:\n{control.stderr}"
    )

    reports = sorted(tmp_path.glob("r.*.rank*.json"))
    assert len(reports) == 2, list(tmp_path.iterdir())
    for path in reports:
        data = json.loads(path.read_text())
        kinds = {(s["line"], s["kind"], tuple(s["apis"])) for s in data["sites"] if s["path"].endswith("prog.py")}
        assert (13, "item", ("Tensor.item",)) in kinds, kinds
        assert (14, "stream_sync", ("torch.distributed.barrier",)) in kinds, kinds
        barrier = next(s for s in data["sites"] if s["line"] == 14)
        assert barrier["blocked_ns"] is not None and barrier["blocked_ns"] > 0
