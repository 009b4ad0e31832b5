"""Parity: the sync catalog (every case of anchors.md section 1) reports exactly its `# expect:`
annotations, on the simulated device here and on a real GPU in the GPU suite.

For each device, in-process (`syncscope.trap`) and through the CLI in a subprocess
(`python -m syncscope run --device DEV -o REPORT tests/catalog/sync_catalog.py`): the set of
(line, kind) reported in the catalog file equals the expectations: every blocking line with its
kind, nothing on a `none` line, nothing on an unannotated line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import syncscope
from tests.catalog.expectations import CATALOG, expectations
from tests.sim_grad_modes import grad_mode  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ["sim", pytest.param("cuda", marks=pytest.mark.gpu)]


def _expected() -> set[tuple[int, str]]:
    return {(line, kind) for line, kind in expectations().items() if kind is not None}


def _in_catalog(path: str) -> bool:
    return Path(path).name == CATALOG.name


def _diff(got: set, want: set) -> str:
    notes = {line: text.strip() for line, text in enumerate(CATALOG.read_text().splitlines(), start=1)}
    lines = [f"missing {line} {kind}: {notes[line]}" for line, kind in sorted(want - got)]
    lines += [f"unexpected {line} {kind}: {notes.get(line, '?')}" for line, kind in sorted(got - want)]
    return "\n".join(lines)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.usefixtures("grad_mode")
def test_catalog_in_process(device):
    from tests.catalog.sync_catalog import run_catalog

    with syncscope.trap(device=device, root=str(ROOT)) as t:
        run_catalog("cuda")
    got = {(e.site.line, e.kind) for e in t.events if _in_catalog(e.site.path)}
    want = _expected()
    assert got == want, _diff(got, want)
    # and nothing attributed to torch's or syncscope's own files
    assert all(_in_catalog(e.site.path) for e in t.events), [e.site for e in t.events if not _in_catalog(e.site.path)]
    if device == "sim":
        assert all(e.blocked_ns is None and e.detector == "sim" for e in t.events)


@pytest.mark.parametrize("device", DEVICES)
def test_catalog_cli(device, tmp_path):
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", device, "--no-table", "-o", str(report),
         str(CATALOG.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "catalog done" in proc.stdout
    data = json.loads(report.read_text())
    assert data["device"] == device
    got = {(s["line"], s["kind"]) for s in data["sites"] if _in_catalog(s["path"])}
    want = _expected()
    assert got == want, _diff(got, want)
    assert all(_in_catalog(s["path"]) for s in data["sites"]), [s["path"] for s in data["sites"]]


def test_catalog_runs_repeatedly_and_uninstalls():
    """Install/uninstall twice in one process; torch is as it was afterwards."""
    import torch

    from tests.catalog.sync_catalog import run_catalog

    before = (torch.cuda.is_available(), torch.cuda.synchronize, torch.cuda.Stream, torch.Tensor.to)
    for _ in range(2):
        with syncscope.trap(device="sim", root=str(ROOT)) as t:
            run_catalog("cuda")
        assert {(e.site.line, e.kind) for e in t.events} == _expected()
    after = (torch.cuda.is_available(), torch.cuda.synchronize, torch.cuda.Stream, torch.Tensor.to)
    assert before == after
    assert torch.overrides._get_current_function_mode_stack() == []
    if not before[0]:
        with pytest.raises((AssertionError, RuntimeError)):
            torch.zeros(2, device="cuda")
