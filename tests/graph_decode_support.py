"""Shared by the sim and GPU halves of the graph_decode example's tests: run it, read its marks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "graph_decode.py"
_MARK = re.compile(r"#\s*(sync|planted):\s*([a-z0-9_]+)")


def marked(which: str) -> set[tuple[str, int, str]]:
    """(path, line, kind) of the example's `# sync: KIND` (or `# planted: KIND`) comments."""
    found = set()
    for number, text in enumerate(EXAMPLE.read_text().splitlines(), start=1):
        match = _MARK.search(text)
        if match and match.group(1) == which and not text.lstrip().startswith("#"):
            found.add(("examples/graph_decode.py", number, match.group(2)))
    return found


def line_of(fragment: str) -> int:
    return next(n for n, t in enumerate(EXAMPLE.read_text().splitlines(), 1) if fragment in t)


def run(tmp_path: Path, *extra: str, device: str | None = None) -> tuple[subprocess.CompletedProcess, dict | None]:
    """Plain python (device None) or `syncscope run --device DEVICE`; the report when there is one."""
    report = tmp_path / f"report-{device}-{len(extra)}.json"
    if device is None:
        command = [sys.executable, str(EXAMPLE.relative_to(ROOT)), *extra]
    else:
        command = [sys.executable, "-m", "syncscope", "run", "--device", device, "--no-table", "-o", str(report),
                   str(EXAMPLE.relative_to(ROOT)), *extra]
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    data = json.loads(report.read_text()) if report.exists() else None
    return proc, data


def sites(data: dict) -> set[tuple[str, int, str]]:
    return {(s["path"], s["line"], s["kind"]) for s in data["sites"]}
