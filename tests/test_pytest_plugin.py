"""The pytest plugin: a planted-sync test fails with its sites listed, a clean one passes."""

from __future__ import annotations

import importlib.util

import pytest

pytest_plugins = ["pytester"]

needs_sim = pytest.mark.skipif(
    importlib.util.find_spec("syncscope.runtime.sim") is None
    or not hasattr(importlib.import_module("syncscope.runtime.sim"), "SimulatedCudaDetector"),
    reason="the simulated device (syncscope.runtime.sim) is not there yet",
)

SIM_TESTS = '''
import pytest
import torch

import syncscope


def step(x):
    return (x * 2).sum().item()  # planted sync


@pytest.mark.no_host_syncs
def test_planted_sync():
    x = torch.arange(8, device="cuda")
    step(x)


@pytest.mark.no_host_syncs(device="sim")
def test_clean_step():
    x = torch.arange(8, device="cuda")
    y = (x * 2).cumsum(0)
    assert y.device.type == "cuda"


def test_clean_with_fixture(no_host_syncs):
    x = torch.ones(4, device="cuda")
    x.add_(1)
    assert no_host_syncs.events == []


def test_fixture_sees_and_fails_on_tolist(no_host_syncs):
    x = torch.ones(4, device="cuda")
    x.tolist()


@pytest.mark.no_host_syncs
def test_allowed_sync_passes():
    x = torch.ones(4, device="cuda")
    with syncscope.allow_sync("read once for the log line"):
        x.sum().item()


@pytest.mark.no_host_syncs
def test_only_regions_count_once_declared():
    x = torch.ones(4, device="cuda")
    with syncscope.region("decode_step"):
        (x + 1).cumsum(0)
    x.sum().item()  # after the step, outside the region: kept apart, not a failure


def test_unmarked_tests_are_left_alone():
    torch.ones(4).sum().item()


@pytest.mark.no_host_syncs
def test_own_failure_is_reported_as_is():
    assert 1 == 2, "the test's own assertion"
'''


@needs_sim
def test_plugin_on_the_simulated_device(pytester):
    pytester.makepyfile(test_sim=SIM_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, failed=3)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*test_planted_sync*",
            "*syncscope: 1 host sync(s) at 1 site(s) in test_sim.py::test_planted_sync (device sim):",
            "*test_sim.py:8: item in step (Tensor.item) x1",
            "*return (x * 2).sum().item()  # planted sync",
            "*called from test_sim.py:14 in test_planted_sync",
        ]
    )
    assert "test_sim.py::test_fixture_sees_and_fails_on_tolist (device sim)" in out
    assert "tolist" in out
    assert "the test's own assertion" in out
    for name in ("test_clean_step", "test_clean_with_fixture", "test_allowed_sync_passes", "test_only_regions_count_once_declared"):
        assert f"{name} PASSED" in out or f"FAILED test_sim.py::{name}" not in out


# The plugin's plumbing on any machine: a stand-in detector records a sync wherever the test calls
# `planted_sync()`, so this runs whether or not a detector for this machine exists.
STANDIN_CONFTEST = '''
import sys
import syncscope.runtime.trap as T


class StandIn:
    name = "stand-in"

    def install(self, recorder):
        T._standin_recorder = recorder

    def uninstall(self):
        T._standin_recorder = None


T.make_detector = lambda device, **options: StandIn()


def planted_sync():
    T._standin_recorder.record("item", "Tensor.item", frame=sys._getframe(1))
'''

STANDIN_TESTS = '''
import pytest
from conftest import planted_sync


@pytest.mark.no_host_syncs(device="sim")
def test_planted():
    planted_sync()
    planted_sync()


@pytest.mark.no_host_syncs(device="sim")
def test_clean():
    pass


def test_fixture(no_host_syncs):
    assert no_host_syncs.events == []
    planted_sync()
    assert len(no_host_syncs.events) == 1


def test_unmarked():
    pass
'''


def test_plugin_plumbing_with_a_stand_in_detector(pytester):
    pytester.makeconftest(STANDIN_CONFTEST)
    pytester.makepyfile(test_standin=STANDIN_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*syncscope: 2 host sync(s) at 2 site(s) in test_standin.py::test_planted (device sim):",
            "*test_standin.py:7: item in test_planted (Tensor.item) x1",
            "*planted_sync()",
            "*test_standin.py:8: item in test_planted (Tensor.item) x1",
        ]
    )
    result.stdout.fnmatch_lines(["*test_clean PASSED*", "*test_unmarked PASSED*"])


def test_marker_is_registered(pytester):
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines(["*no_host_syncs(device='auto'): fail the test on any in-scope host sync*"])


NESTED_TESTS = '''
import pytest
import torch


@pytest.mark.no_host_syncs
def test_planted():
    x = torch.arange(4, device="cuda")
    x.sum().item()


@pytest.mark.no_host_syncs
def test_clean():
    x = torch.arange(4, device="cuda")
    x.add_(1)
'''


@needs_sim
def test_plugin_inside_syncscope_run(tmp_path):
    """`syncscope run -m pytest`: the tests reuse the run's trap; each test sees only its own syncs."""
    import subprocess
    import sys

    (tmp_path / "test_nested.py").write_text(NESTED_TESTS)
    cmd = [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", "r.json",
           "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_nested.py"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 1 passed" in proc.stdout
    assert "syncscope: 1 host sync(s) at 1 site(s) in test_nested.py::test_planted (device sim):" in proc.stdout
