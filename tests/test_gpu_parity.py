"""The parity suite's GPU half (issue 14; run on the device machine: `pytest -m gpu`): every
program of tests/parity/programs/ runs under `syncscope run --device cuda` and
- prints exactly what plain `python PROGRAM` prints on the same GPU (syncscope changes nothing);
- for programs marked `# parity: stdout is the same on every device` (greedy token ids, rounded
  metrics of fp32 models), also what the plain CPU reference prints (PARITY_DEVICE=cpu). Sampling
  draws from CUDA's generator, beam scores and bf16 training losses depend on the GPU's kernels:
  those programs are compared with their own GPU run only, and by site set;
- reports the (path, line, kind) set that tests/parity/expected_sites.json holds for it: the
  GPU's sets (recorded on the H100 with `python -m tests.parity.record --device cuda --write`), which
  the simulated device's match in CI. torch.compile's own syncs while it compiles and autotunes
  (compiled_decode) are allowed sites with compile_phase.REASON, outside the set; nothing else is
  allowed."""

from __future__ import annotations

import pytest

from syncscope.runtime import compile_phase
from tests.parity.support import (
    allow_reasons, diff, expected_sites, load_expected, missing_modules, program_names, run_many, runnable,
    site_set, stable_across_devices, version_mismatch,
)

pytestmark = pytest.mark.gpu
NAMES = program_names()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("parity-gpu")
    names = runnable(NAMES)
    jobs = [(name, out, None, None) for name in names] + [(name, out, "cuda", None) for name in names]
    jobs += [(name, out, None, "cpu") for name in names if stable_across_devices(name)]
    results = run_many(jobs, workers=4)
    return {(job[0], job[2] or job[3] or "plain-cuda"): run for job, run in zip(jobs, results)}


@pytest.mark.parametrize("name", NAMES)
def test_program_on_the_gpu_prints_plain_output_and_reports_the_expected_sites(runs, name):
    if missing_modules(name):
        pytest.skip(f"needs {', '.join(missing_modules(name))} (not installed here)")
    if version_mismatch(name):
        pytest.skip(version_mismatch(name))
    plain, traced = runs[(name, "plain-cuda")], runs[(name, "cuda")]
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert traced.returncode == 0, traced.stderr[-3000:]
    assert traced.stdout == plain.stdout
    if stable_across_devices(name):
        reference = runs[(name, "cpu")]
        assert reference.returncode == 0, reference.stderr[-3000:]
        assert traced.stdout == reference.stdout, "GPU and CPU printouts differ (arithmetic, not syncscope)"
    got, want = site_set(traced.report), expected_sites(name)
    assert allow_reasons(traced.report) <= {compile_phase.REASON}
    assert got == want, f"{name} (expected from: {load_expected()['source']}):\n{diff(want, got)}"
