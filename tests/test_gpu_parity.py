"""The parity suite's GPU half (issue 14; run on the device machine: `pytest -m gpu`): every
program of tests/parity/programs/ runs under `syncscope run --device cuda` and
- prints exactly what plain `python PROGRAM` prints on the same GPU (syncscope changes nothing);
- for programs marked `# parity: stdout is the same on every device` (greedy token ids, rounded
  metrics of fp32 models), also what the plain CPU reference prints (PARITY_DEVICE=cpu). Sampling
  draws from CUDA's generator, beam scores and bf16 training losses depend on the GPU's kernels:
  those programs are compared with their own GPU run only, and by site set;
- reports the (path, line, kind) set that tests/parity/expected_sites.json holds for it: the
  GPU's sets (recorded on the H100 with `python -m tests.parity.record --device cuda --write`), which
  the simulated device's match in CI; for compiled_decode, the simulated device's set plus the syncs
  of Inductor compiling inside the run, which only a GPU has (GPU_EXTRAS)."""

from __future__ import annotations

import pytest

from tests.parity.support import (
    ROOT, diff, expected_sites, load_expected, missing_modules, program_names, run_many, runnable, site_set,
    stable_across_devices,
)

pytestmark = pytest.mark.gpu
NAMES = program_names()


def _compiling(site) -> bool:
    """A sync of Inductor compiling and autotuning inside the run, which only the GPU has
    (docs/simulated-device.md, compiled code): in its generated module, or at the call of the
    compiled function (`decode_step(...)` in compiled_decode.py)."""
    path, line, _ = site
    if "torchinductor_" in path:
        return True
    source = ROOT / path
    return path.endswith("compiled_decode.py") and "decode_step(" in source.read_text().splitlines()[line - 1]


# Programs whose GPU set holds the expected set plus sites explained as above (the expected set is
# the simulated device's there: tests/parity/expected_sites.json's note says so).
GPU_EXTRAS = {"compiled_decode": _compiling}


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
    plain, traced = runs[(name, "plain-cuda")], runs[(name, "cuda")]
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert traced.returncode == 0, traced.stderr[-3000:]
    assert traced.stdout == plain.stdout
    if stable_across_devices(name):
        reference = runs[(name, "cpu")]
        assert reference.returncode == 0, reference.stderr[-3000:]
        assert traced.stdout == reference.stdout, "GPU and CPU printouts differ (arithmetic, not syncscope)"
    got, want = site_set(traced.report), expected_sites(name)
    if name in GPU_EXTRAS:
        unexplained = {site for site in got - want if not GPU_EXTRAS[name](site)}
        assert want <= got and not unexplained, f"{name}:\n{diff(want, (got & want) | unexplained)}"
        return
    assert got == want, f"{name} (expected from: {load_expected()['source']}):\n{diff(want, got)}"
