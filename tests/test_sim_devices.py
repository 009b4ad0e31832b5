"""Several simulated GPUs (issue 14): `cuda:0` and `cuda:1` (SYNCSCOPE_SIM_DEVICES, default 2),
`set_device`, `with torch.cuda.device(i)`, results on their inputs' device, mixed-device ops
failing as on a GPU, device-to-device copies free and device<->host copies reported; programs
give plain CPU's numbers, under grad, no_grad and inference_mode."""

from __future__ import annotations

import threading

import pytest
import torch

import syncscope
from syncscope.events import SyncKind as K
from tests import sim_training_programs as programs
from tests.sim_grad_modes import grad_mode  # noqa: F401

PROGRAMS = programs.DEVICE_PROGRAMS


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_two_gpu_program_matches_plain_cpu_and_reports_the_gpus_syncs(tmp_path, name):
    if torch.cuda.is_available():  # plain python would take the real GPU: tests/test_gpu_training.py
        pytest.skip("plain python runs these programs on the GPU here; the GPU half is tests/test_gpu_training.py")
    path = programs.write(tmp_path, name, PROGRAMS)
    plain, _ = programs.run(path)
    simulated, sites = programs.run(path, device="sim")
    assert simulated == plain
    assert sites == programs.expected(name, PROGRAMS)


@pytest.mark.usefixtures("grad_mode")
def test_results_stay_on_their_device():
    with syncscope.trap(device="sim") as t:
        a = torch.arange(6.0, device="cuda:1").reshape(2, 3)
        layer = torch.nn.Linear(3, 2).to("cuda:1")
        outs = {
            "op": a * 2, "view": a[:, 1:], "out": layer(a), "index": a[a > 2],
            "attention": torch.nn.functional.scaled_dot_product_attention(a[None], a[None], a[None]),
            "factory": torch.zeros(2, device=torch.device("cuda", 1)), "like": torch.empty_like(a),
            "int": torch.ones(1, device=1), "moved": a.to("cuda:0").to("cuda:1"),
        }
        for name, value in outs.items():
            assert value.device == torch.device("cuda", 1), name
        assert a.cuda().device == torch.device("cuda", 0)  # `.cuda()`: the current device
        assert a.cuda(1) is a and a.to("cuda:1") is a
    assert {e.kind for e in t.events} == {K.H2D_COPY, K.BOOL_MASK_INDEX}  # layer.to, a[a > 2]


def test_an_op_mixing_devices_fails_as_on_a_gpu():
    with syncscope.trap(device="sim"):
        a = torch.ones(3, device="cuda:0")
        b = torch.ones(3, device="cuda:1")
        with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cuda:1"):
            a + b
        with pytest.raises(RuntimeError, match="same device"):
            torch.nn.Linear(3, 1).to("cuda:0")(b)
        b.copy_(a)  # a copy may cross devices
        assert torch.equal(b.cpu(), torch.ones(3))


def test_set_device_and_device_context_are_per_thread():
    with syncscope.trap(device="sim"):
        assert torch.cuda.device_count() == 2 and torch.cuda.current_device() == 0
        with torch.cuda.device(1):
            assert torch.cuda.current_device() == 1
            assert torch.zeros(1, device="cuda").device.index == 1
            seen = []
            worker = threading.Thread(target=lambda: seen.append(torch.cuda.current_device()))
            worker.start()
            worker.join()
            assert seen == [0]  # a new thread starts on device 0, as in CUDA
        assert torch.cuda.current_device() == 0
        torch.cuda.set_device(1)
        try:
            assert torch.randn(2).cuda().device.index == 1
            with torch.cuda.device_of(torch.ones(1, device="cuda:0")):
                assert torch.cuda.current_device() == 0
        finally:
            torch.cuda.set_device(0)


def test_cross_device_copies_are_reported_as_a_gpu_would():
    with syncscope.trap(device="sim") as t:
        a = torch.ones(4, device="cuda:0")
        b = a.to("cuda:1")  # device to device: the host does not wait
        c = torch.empty(4, device="cuda:1")
        c.copy_(a)
        torch.ones(4).to("cuda:1")  # h2d
        b.cpu()  # d2h
        pinned = torch.empty(4).pin_memory()
        pinned.copy_(b, non_blocking=True)  # free, and a race until synchronized
        torch.cuda.synchronize()
    kinds = [e.kind for e in t.events]
    assert kinds == [K.H2D_COPY, K.CPU_COPY, K.DEVICE_SYNC]


def test_the_number_of_devices_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("SYNCSCOPE_SIM_DEVICES", "4")
    with syncscope.trap(device="sim"):
        assert torch.cuda.device_count() == 4 and torch.accelerator.device_count() == 4
        assert torch.zeros(1, device="cuda:3").device.index == 3
    monkeypatch.setenv("SYNCSCOPE_SIM_DEVICES", "1")
    with syncscope.trap(device="sim"):
        assert torch.cuda.device_count() == 1
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            torch.zeros(1, device="cuda:1")
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            torch.cuda.set_device(1)
    monkeypatch.setenv("SYNCSCOPE_SIM_DEVICES", "many")
    with pytest.raises(ValueError, match="SYNCSCOPE_SIM_DEVICES='many'"):
        with syncscope.trap(device="sim"):
            pass


def test_a_bad_device_count_is_one_error_line_and_exit_2(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    program = tmp_path / "p.py"
    program.write_text("print('ran')\n")
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", str(program)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(root), "SYNCSCOPE_SIM_DEVICES": "0"},
    )
    assert proc.returncode == 2 and "ran" not in proc.stdout
    assert proc.stderr.strip().splitlines() == ["syncscope: error: SYNCSCOPE_SIM_DEVICES='0': expected a number of simulated GPUs from 1 to 64"]


@pytest.mark.usefixtures("grad_mode")
def test_data_parallel_splits_the_batch_over_the_simulated_gpus():
    def run(device):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).to(device)
        out = torch.nn.DataParallel(model)(torch.randn(8, 3).to(device))
        grad = None
        if out.requires_grad:
            out.square().sum().backward()
            grad = model[0].weight.grad.cpu()
        return out.detach().cpu(), grad

    want = run("cpu")
    with syncscope.trap(device="sim") as t:
        got = run("cuda")
    assert torch.equal(got[0], want[0])
    if want[1] is not None:
        # the replicas' gradients are summed across devices: CPU's up to summation order
        torch.testing.assert_close(got[1], want[1])
    assert {e.kind for e in t.events} == {K.H2D_COPY, K.CPU_COPY}  # .to(device) and .cpu() only
