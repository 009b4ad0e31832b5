"""vLLM's own metadata builders under the simulated device (examples/engines/vllm/): the pinned
engine set is gigabytes, so this runs only where it is installed (not in .ci/run):

    examples/engines/vllm/integration.sh      # makes the venvs (setup.sh), then runs this file

SYNCSCOPE_VLLM_VENV: a venv made by `setup.sh VENV 0.33.0`; SYNCSCOPE_VLLM_PREFIX_VENV: one made by
`setup.sh VENV 0.18.0` (the release before the seed fixes). Each test skips, saying why, without its venv.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import pytest

pytestmark = pytest.mark.engine

HERE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "engines" / "vllm"


def _venv(variable: str, version: str) -> pathlib.Path:
    path = os.environ.get(variable)
    if not path:
        pytest.skip(f"{variable} is not set: the pinned vLLM {version} set is not installed here "
                    f"(examples/engines/vllm/integration.sh installs it; gigabytes, so not in .ci/run)")
    venv = pathlib.Path(path)
    found = subprocess.run([str(venv / "bin" / "python"), "-c", "import vllm; print(vllm.__version__)"],
                           capture_output=True, text=True)
    if found.returncode != 0 or found.stdout.strip() != version:
        pytest.skip(f"{variable}={path} has no vLLM {version} ({found.stdout.strip() or found.stderr[-200:]})")
    return venv


def _in_scope(report: pathlib.Path) -> set[tuple[str, int, str]]:
    sites = json.loads(report.read_text())["sites"]
    return {(s["path"], s["line"], s["kind"]) for s in sites if s["in_scope"]}


def _reached_from(report: pathlib.Path, site: tuple[str, int, str]) -> set[tuple[str, int]]:
    """The (path, line) frames above an in-scope site: where a helper's sync was reached from."""
    frames = set()
    for s in json.loads(report.read_text())["sites"]:
        if s["in_scope"] and (s["path"], s["line"], s["kind"]) == site:
            frames |= {(f["path"], f["line"]) for f in s.get("stack", [])[1:]}
    return frames


def test_vllm_033_builders_pass_the_gate(tmp_path):
    venv = _venv("SYNCSCOPE_VLLM_VENV", "0.33.0")
    proc = subprocess.run([str(HERE / "gate.sh"), str(venv), str(tmp_path)], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert _in_scope(tmp_path / "gdn_builder.json") == set()
    assert _in_scope(tmp_path / "eagle_inputs.json") == set()
    # the one in-scope read of the helpers: vLLM's own `gpu_sync_allowed()` block (local attention)
    assert _in_scope(tmp_path / "backend_utils.json") == {("vllm/v1/attention/backends/utils.py", 551, "cpu_copy")}
    # FlashInfer as on an H100: the one read is vLLM's own `gpu_sync_allowed()` copy of seq_lens
    # for a speculative batch with prefills (the host upper bound is not exact there)
    assert _in_scope(tmp_path / "flashinfer_builder.json") == {("vllm/v1/attention/backends/flashinfer.py", 1679, "cpu_copy")}
    # as on a B200 (all TRT-LLM): none, and the prefill KV page offsets are the batch's own
    assert _in_scope(tmp_path / "flashinfer_builder_sm100.json") == set()
    log = (tmp_path / "flashinfer_builder_sm100.log").read_text()
    assert log.count("cum_seq_lens_kv=ok") == 3, log[-2000:]
    # FlashMLA with the MLA builder it inherits: none
    assert _in_scope(tmp_path / "mla_builder.json") == set()


def test_planted_device_mask_fails_the_gate_at_its_line(tmp_path):
    venv = _venv("SYNCSCOPE_VLLM_VENV", "0.33.0")
    proc = subprocess.run([str(HERE / "plant_regression.sh"), str(venv), str(tmp_path)], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "syncscope gate FAILED: 1 site(s)" in proc.stdout
    assert "vllm/v1/attention/backends/gdn_attn.py:468: bool_mask_index in GDNAttentionMetadataBuilder.build" in proc.stdout


def test_release_before_the_seed_fixes_shows_their_syncs(tmp_path):
    venv = _venv("SYNCSCOPE_VLLM_PREFIX_VENV", "0.18.0")
    proc = subprocess.run([str(HERE / "run_all.sh"), str(venv), str(tmp_path)], capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    gdn = _in_scope(tmp_path / "gdn_builder.json")
    gdn_file = "vllm/v1/attention/backends/gdn_attn.py"
    # PR 38047: the device boolean mask and repeat_interleave without output_size
    for line in (247, 266, 269, 279, 287, 302, 307):
        assert (gdn_file, line, "bool_mask_index") in gdn, line
    assert (gdn_file, 258, "repeat_interleave") in gdn
    # PR 40654: the lazy seq_lens_cpu property, read by the helpers and by EAGLE
    seq_lens_cpu = ("vllm/v1/attention/backend.py", 391, "cpu_copy")
    assert seq_lens_cpu in _in_scope(tmp_path / "backend_utils.json")
    assert seq_lens_cpu in _in_scope(tmp_path / "eagle_inputs.json")
    # PR 39546: as on a B200 every kernel of these batches is TRT-LLM, yet the builder read the
    # host seq_lens for every batch that was not decode-only (guard at flashinfer.py:914-915);
    # that read is the only in-scope sync there
    fi_sm100 = tmp_path / "flashinfer_builder_sm100.json"
    assert _in_scope(fi_sm100) == {seq_lens_cpu}
    assert ("vllm/v1/attention/backends/flashinfer.py", 915) in _reached_from(fi_sm100, seq_lens_cpu)
    # ... and handed the TRT-LLM prefill a slice of the whole batch's page offsets (PR 39546's
    # cumsum on the device fixed it): the mixed batches' offsets start at the decodes' pages
    log = (tmp_path / "flashinfer_builder_sm100.log").read_text()
    assert "cum_seq_lens_kv=[16, 19, 23] (batch: [0, 3, 7])" in log, log[-2000:]
    # as on an H100: the same read, and FlashInfer's plan() copying from pageable host memory
    fi_sm90 = _in_scope(tmp_path / "flashinfer_builder.json")
    assert seq_lens_cpu in fi_sm90
    assert {("flashinfer/prefill.py", 1828, "h2d_pageable"), ("flashinfer/prefill.py", 1884, "h2d_pageable"),
            ("flashinfer/decode.py", 957, "h2d_pageable")} <= fi_sm90
    # the MLA builder read the computed-token counts back from the device for every batch with
    # prefills (0.33.0 takes them from the host upper bound, PR 40654's mirror)
    mla_file = "vllm/model_executor/layers/attention/mla_attention.py"
    assert (mla_file, 1735, "cpu_copy") in _in_scope(tmp_path / "mla_builder.json")
