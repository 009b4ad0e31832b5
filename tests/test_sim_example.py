"""examples/cuda_only.py (written only for CUDA) runs under `syncscope run --device sim` on a
machine with no GPU and reports exactly the sites its `# sync:` / `# hazard:` comments name."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "cuda_only.py"
_MARK = re.compile(r"#\s*(?:sync|hazard):\s*([a-z0-9_]+)")


def _marked() -> set[tuple[int, str]]:
    found = set()
    for number, text in enumerate(EXAMPLE.read_text().splitlines(), start=1):
        match = _MARK.search(text)
        if match and not text.lstrip().startswith(("#", "-", "`")):
            found.add((number, match.group(1)))
    return found


def test_cuda_only_example_reports_its_syncs_on_the_simulated_device(tmp_path):
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", str(report), str(EXAMPLE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "decoded" in proc.stdout and "simulated" in proc.stdout
    data = json.loads(report.read_text())
    sites = {(s["line"], s["kind"]) for s in data["sites"] if s["path"].endswith("examples/cuda_only.py")}
    assert sites == _marked()
    copy_line = next(n for n, t in enumerate(EXAMPLE.read_text().splitlines(), 1) if "host_tokens.copy_(" in t)
    hazards = [s for s in data["sites"] if s["kind"] == "unsynced_d2h_read"]
    assert hazards and all(s["related"]["line"] == copy_line for s in hazards)
