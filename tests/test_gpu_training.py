"""The GPU half of tests/test_sim_autograd.py (run on the device machine: `pytest -m gpu`): the same
training programs under the real CUDA detector report exactly the (line, kind) set their
`# sync:` comments name, the set the simulated device reports on the CPU; and the trap changes
none of the program's numbers on the GPU."""

from __future__ import annotations

import pytest

from tests import sim_training_programs as programs

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", programs.VALID + programs.INVALID)
def test_training_program_on_the_gpu_reports_the_simulated_devices_syncs(tmp_path, name):
    path = programs.write(tmp_path, name)
    plain, _ = programs.run(path)
    on_gpu, sites = programs.run(path, device="cuda")
    # The programs avoid nondeterministic kernels (no atomics on repeated indices), so two GPU runs
    # print the same digits.
    assert on_gpu == plain
    assert sites == programs.expected(name)


@pytest.mark.parametrize("name", sorted(programs.DEVICE_PROGRAMS))
def test_two_gpu_program_on_the_gpu_reports_the_simulated_devices_syncs(tmp_path, name):
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two CUDA devices (nvidia-h200-x2)")
    path = programs.write(tmp_path, name, programs.DEVICE_PROGRAMS)
    plain, _ = programs.run(path)
    on_gpu, sites = programs.run(path, device="cuda")
    assert on_gpu == plain
    assert sites == programs.expected(name, programs.DEVICE_PROGRAMS)
