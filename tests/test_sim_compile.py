"""`torch.compile` under the simulated device (issue 14, first step): compiled functions and modules
run eagerly with eager's outputs, one notice on stderr, never a dynamo traceback; a sync inside a
compiled function is reported at its line (where eager code has it)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROGRAM = textwrap.dedent("""
    import torch

    @torch.compile
    def step(x):
        return torch.softmax(x @ x.T, dim=-1).sum(0)

    @torch.compile(mode="reduce-overhead", fullgraph=True)
    def total(x):
        return x.sum().item()  # compiled-sync

    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 4)
    x = torch.randn(3, 4)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    layer = layer.to(device)
    layer.compile()
    fast = torch.compile(layer)
    with torch.no_grad():
        y = step(fast(x.to(device)))
    print("out", [round(v, 5) for v in y.tolist()], round(total(y), 5))
""")


def _run(tmp_path: Path, *prefix: str) -> subprocess.CompletedProcess:
    program = tmp_path / "compiled.py"
    program.write_text(PROGRAM)
    return subprocess.run([sys.executable, *prefix, str(program)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_compiled_code_runs_eagerly_with_one_notice(tmp_path):
    report = tmp_path / "r.json"
    simulated = _run(tmp_path, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", str(report))
    assert simulated.returncode == 0, simulated.stderr[-3000:]
    assert simulated.stderr.count("torch.compile is not simulated") == 1
    assert "Traceback" not in simulated.stderr and "dynamo" not in simulated.stderr.lower()
    import json

    data = json.loads(report.read_text())
    line = next(n for n, t in enumerate(PROGRAM.splitlines(), 1) if t.rstrip().endswith("# compiled-sync"))
    assert ("compiled.py", line, "item") in {(Path(s["path"]).name, s["line"], s["kind"]) for s in data["sites"]}
    import torch

    if not torch.cuda.is_available():  # plain python then takes the same (CPU) numbers
        plain = _run(tmp_path)
        assert plain.returncode == 0, plain.stderr[-3000:]
        assert simulated.stdout == plain.stdout
