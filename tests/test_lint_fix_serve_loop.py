"""`syncscope lint --fix` on a copy of reference_impl/'s naive builders, proven by running
examples/serve_loop.py --impl naive under `syncscope run` (issue 27): the tool's fixes alone keep
the tokens the program prints and remove every sync they target. On the simulated device here;
the `gpu`-marked twin runs the same on a real GPU (skipped without CUDA)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SMALL = ["--steps", "6", "--warmup", "2", "--hidden", "64", "--layers", "1", "--max-batch", "8", "--max-tokens", "512"]
PROGRAM = ["examples/serve_loop.py", "--impl", "naive", *SMALL]
# The syncs of the naive builders that a fix targets: (file, line, runtime kind). The SYN301 fixes
# (seq_lens_upper_bound.py:133, trtllm_indptr.py:77) remove the property's sync at line 50.
TARGETED = {
    ("gdn_spec_decode.py", 77, "bool_mask_index"), ("gdn_spec_decode.py", 78, "bool_mask_index"),
    ("gdn_spec_decode.py", 79, "bool_mask_index"), ("gdn_spec_decode.py", 80, "bool_mask_index"),
    ("gdn_spec_decode.py", 81, "bool_mask_index"), ("gdn_spec_decode.py", 84, "repeat_interleave"),
    ("seq_lens_upper_bound.py", 50, "cpu_copy"),
}
# What no fix targets (no host copy in scope): the accepted counts and cu_seqlens read back, and
# the program's two deliberate end-of-phase reads.
UNTARGETED = {
    ("async_spec_decode.py", 136, "tolist"), ("gdn_chunk_indices.py", 57, "tolist"),
    ("serve_loop.py", 270, "item"), ("serve_loop.py", 274, "item"),
}
COPIES = {("gdn_chunk_indices.py", 58), ("gdn_chunk_indices.py", 59)}  # SYN403: pageable `.to(device)`


@pytest.fixture
def project(tmp_path):
    """reference_impl and the example in a project of their own (a copy: the repo stays as it is)."""
    root = tmp_path / "project"
    shutil.copytree(REPO / "reference_impl", root / "reference_impl", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "examples").mkdir()
    shutil.copy(REPO / "examples" / "serve_loop.py", root / "examples" / "serve_loop.py")
    # The serving loop that calls the builders' entry points is outside the linted folder, so the
    # project names them as per-step roots (as the linter's own seed-recall test does).
    (root / "pyproject.toml").write_text("[project]\nname = 'serve-loop-copy'\n\n[tool.syncscope.lint]\n"
                                         "hot-roots = [\"*.finish\", \"gdn_chunk_prefill\"]\n")
    return root


def _env() -> dict:
    # keep what the machine adds (the GPU machine's carried wheels sit on PYTHONPATH)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.setdefault("TRITON_INTERPRET", "1")  # the fixed builders' Triton kernels, on a CPU-only machine
    return env


def syncscope(*args, cwd, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "syncscope", *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=timeout)


def run_program(root: Path, device: str, name: str) -> tuple[str, dict[tuple[str, int, str], dict]]:
    """(the tokens line with timings masked, the report's sites by (file, line, kind))."""
    report = root.parent / f"{name}.json"
    proc = syncscope("run", "--device", device, "-o", str(report), "--no-table", *PROGRAM, cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = [text for text in proc.stdout.splitlines() if text.startswith("impl=")][-1]
    sites = {(Path(s["path"]).name, s["line"], s["kind"]): s for s in json.loads(report.read_text())["sites"]
             if not s["allowed"]}
    return re.sub(r"\d+\.\d+", "#", line), sites


@pytest.mark.parametrize("device", ["sim", pytest.param("cuda", marks=pytest.mark.gpu)])
def test_the_tools_fixes_alone_keep_the_tokens_and_remove_the_syncs(project, device):
    before_line, before = run_program(project, device, "before")
    assert TARGETED <= set(before), f"the naive program no longer syncs where expected: {sorted(before)}"

    naive = {p: p.read_text() for p in (project / "reference_impl").glob("*.py")}
    fixed = syncscope("lint", "reference_impl", "--fix", "--unsafe-fixes", "--no-cache", cwd=project)
    assert fixed.returncode in (0, 1), fixed.stderr
    files = {p: p.read_text() for p in (project / "reference_impl").glob("*.py")}
    assert files != naive, fixed.stdout[-3000:] + fixed.stderr[-2000:]  # the tool changed the code
    again = syncscope("lint", "reference_impl", "--fix", "--unsafe-fixes", "--no-cache", cwd=project)
    assert again.returncode in (0, 1) and "Fixed" not in again.stderr  # a second --fix changes nothing
    assert {p: p.read_text() for p in files} == files
    after_line, after = run_program(project, device, "after")

    assert "tokens=" in before_line and after_line == before_line  # same tokens, same requests finished
    gone = {(f, line) for f, line, _ in TARGETED}
    left = {key for key in after if (key[0], key[1]) in gone}
    # On a GPU, indexing with a host mask uploads the indices it computed (a small pageable copy
    # that does not wait for the GPU: reported as `potential`); no targeted sync is left.
    assert all(after[key]["kind"] == "h2d_pageable" and after[key]["potential"] for key in left), \
        {key: after[key]["kind"] for key in left}
    assert UNTARGETED <= set(after)  # what no fix targets still syncs: the run is the same program
    copies = (project / "reference_impl" / "gdn_chunk_indices.py").read_text()
    if "pin_memory" in copies:  # the SYN403 fix pins the source: the copies no longer wait
        assert not {key for key in after if (key[0], key[1]) in COPIES}
    else:  # non_blocking=True alone, from pageable memory, still waits
        assert {(f, line) for f, line, kind in after if kind == "h2d_pageable"} >= COPIES


def test_verify_keeps_the_fixes_a_run_proves(project):
    proc = syncscope("lint", "reference_impl", "--fix", "--unsafe-fixes", "--no-cache", "--verify", "--",
                     "python", *PROGRAM, cwd=project, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    table = {}
    for line in proc.stdout.splitlines():
        match = re.match(r"(kept|refused)\s+reference_impl/(\S+):(\d+)\s+(SYN\d+)\s+(.*)", line)
        if match:
            table[(match[2], int(match[3]), match[4])] = (match[1], match[5])
    seeds = {("gdn_spec_decode.py", line, "SYN101") for line in range(77, 82)} | {
        ("gdn_spec_decode.py", 84, "SYN104"), ("seq_lens_upper_bound.py", 133, "SYN301")}
    assert all(table[key][0] == "kept" for key in seeds), table
    # trtllm's read of the property never syncs here: the chunked-context builder read it first
    assert table[("trtllm_indptr.py", 77, "SYN301")] == ("refused", "the run never synced here: nothing to verify")
    for key in [k for k in table if k[2] == "SYN403"]:
        assert table[key][0] == "kept" or table[key][1] == "the site still syncs after the fix"
    assert "verify: kept" in proc.stdout

    # only the kept fixes were written; the tool's forms next to the hand-written fixed builders
    spec = (project / "reference_impl" / "gdn_spec_decode.py").read_text()
    assert "spec, non_spec = spec_mask_cpu, ~spec_mask_cpu  # device masks" in spec  # PR 38047: index with the host mask
    assert "torch.repeat_interleave(spec_mask, query_lens, output_size=int((qsl_cpu[1:] - qsl_cpu[:-1]).sum()))" in spec
    bound = (project / "reference_impl" / "seq_lens_upper_bound.py").read_text()
    assert ("seq_lens_cpu = common.seq_lens_cpu_upper_bound if self.impl == \"naive\" "
            "else common.seq_lens_cpu_upper_bound") in bound  # the fixed builder's own read (PR 40654)
    trtllm = (project / "reference_impl" / "trtllm_indptr.py").read_text()
    assert "seq_lens_cpu = common.seq_lens_cpu  # the lazy property" in trtllm  # refused: left alone
