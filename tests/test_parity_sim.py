"""The parity suite's CPU half (issue 14): every program of tests/parity/programs/ is written for
CUDA only; under `syncscope run --device sim` it must print exactly what plain CPU python prints
(PARITY_DEVICE=cpu), and report the (path, line, kind) set that tests/parity/expected_sites.json
holds for it (the GPU's sets, once recorded there with tests/parity/record.py on a GPU)."""

from __future__ import annotations

import pytest

from tests.parity.support import (
    allow_reasons, diff, expected_sites, load_expected, missing_modules, program_names, run_many, runnable, site_set,
    version_mismatch,
)

NAMES = program_names()
# Programs the simulated device cannot run yet, each with the failure it gives (strict: the test
# fails as soon as one starts to pass, so the mark goes with the fix).
NOT_YET: dict[str, str] = {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Plain CPU python and the simulated device for every program, two processes at a time."""
    out = tmp_path_factory.mktemp("parity")
    names = runnable(NAMES)
    jobs = [(name, out, None, "cpu") for name in names] + [(name, out, "sim", None) for name in names]
    return {(job[0], job[2] or "plain"): run for job, run in zip(jobs, run_many(jobs))}


def test_the_suite_has_the_programs_the_issue_names():
    assert len(NAMES) >= 12
    assert set(load_expected()["programs"]) == set(NAMES)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=NOT_YET[n])) if n in NOT_YET else n for n in NAMES]
)
def test_program_on_the_simulated_device_prints_plain_cpu_output_and_reports_the_expected_sites(runs, name):
    if missing_modules(name):
        pytest.skip(f"needs {', '.join(missing_modules(name))} (not installed here)")
    if version_mismatch(name):
        pytest.skip(version_mismatch(name))
    plain, sim = runs[(name, "plain")], runs[(name, "sim")]
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert plain.stdout.strip(), "the program printed nothing to compare"
    assert sim.returncode == 0, sim.stderr[-3000:]
    assert sim.stdout == plain.stdout
    got, want = site_set(sim.report), expected_sites(name)
    assert not allow_reasons(sim.report), "the simulated device compiles nothing: it allows no sync"
    assert got == want, f"{name} (expected from: {load_expected()['source']}):\n{diff(want, got)}"
