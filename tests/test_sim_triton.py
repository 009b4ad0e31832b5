"""Triton kernels launched with simulated CUDA tensors run through Triton's interpreter on the
CPU data: kernels decorated before the device was installed (compiled-mode `JITFunction`s,
rerouted) and after (`TRITON_INTERPRET=1` set by the install: `InterpretedFunction`s)."""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap

import pytest
import torch

import syncscope

# Like every test module that runs Triton on the CPU: interpret, if this process has not imported
# triton yet (triton's own @jit library functions are built at its import). The compiled-mode
# case is built explicitly below, and run in a fresh process in the last test.
if "triton" not in sys.modules:
    os.environ.setdefault("TRITON_INTERPRET", "1")
triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def _scale_add_py(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0)
    tl.store(out_ptr + offsets, _axpy(alpha, x, y), mask=mask)


def _axpy_py(alpha, x, y):  # a device function called from the kernel
    return alpha * x + y


# Compiled-mode kernel and helper, whatever TRITON_INTERPRET says in this process: what a module
# imported before the simulated device was installed holds.
_axpy = JITFunction(_axpy_py)
_scale_add_kernel = JITFunction(_scale_add_py)


def _launch(kernel, x, y, alpha=2.0):
    out = torch.empty_like(x)
    n = x.numel()
    kernel[(triton.cdiv(n, 32),)](x, y, out, n, alpha, BLOCK=32)
    return out


def test_kernel_decorated_before_install_runs_on_simulated_tensors():
    assert isinstance(_scale_add_kernel, JITFunction)  # compiled mode: would need a GPU driver
    x_cpu, y_cpu = torch.randn(100), torch.randn(100)
    with syncscope.trap(device="sim") as t:
        x, y = x_cpu.cuda(), y_cpu.cuda()
        out = _launch(_scale_add_kernel, x, y)
        assert out.is_cuda
        assert torch.allclose(out.cpu(), 2.0 * x_cpu + y_cpu)
    # the launch itself is asynchronous on a GPU: only the two uploads and the read are syncs
    assert sorted(e.kind for e in t.events) == ["cpu_copy", "h2d_copy", "h2d_copy"]


KERNEL_MODULE = textwrap.dedent(
    '''
    import triton
    import triton.language as tl

    @triton.jit
    def negate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, -tl.load(x_ptr + offsets, mask=mask), mask=mask)
    '''
)


def test_kernel_imported_inside_the_trap_is_interpreted(tmp_path):
    path = tmp_path / "sim_negate_kernels.py"
    path.write_text(KERNEL_MODULE)
    before = os.environ.get("TRITON_INTERPRET")
    with syncscope.trap(device="sim"):
        assert os.environ.get("TRITON_INTERPRET") == "1"
        spec = importlib.util.spec_from_file_location("sim_negate_kernels", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        from triton.runtime.interpreter import InterpretedFunction

        assert isinstance(module.negate_kernel, InterpretedFunction)
        x = torch.arange(40, dtype=torch.float32, device="cuda")
        out = torch.empty_like(x)
        module.negate_kernel[(2,)](x, out, 40, BLOCK=32)
        assert torch.equal(out.cpu(), -torch.arange(40, dtype=torch.float32))
    sys.modules.pop("sim_negate_kernels", None)
    assert os.environ.get("TRITON_INTERPRET") == before


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def _double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, 2 * tl.load(x_ptr + offsets, mask=mask), mask=mask)


def test_autotuned_kernel_runs_with_its_first_config():
    with syncscope.trap(device="sim"):
        x = torch.arange(50, dtype=torch.float32, device="cuda")
        out = torch.empty_like(x)
        _double_kernel[lambda meta: (triton.cdiv(50, meta["BLOCK"]),)](x, out, 50)
        assert torch.equal(out.cpu(), 2 * torch.arange(50, dtype=torch.float32))
        assert len(_double_kernel.configs) == 2


TRITON_FIRST = textwrap.dedent(
    """
    import torch, triton, triton.language as tl   # triton imported before the device is installed
    import syncscope

    @triton.jit
    def k(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, tl.cumsum(x, axis=0) + tl.sum(x, axis=0) + tl.sigmoid(x))

    with syncscope.trap(device="sim"):
        x = torch.arange(8., device="cuda")
        out = torch.empty_like(x)
        k[(1,)](x, out, BLOCK=8)
        xc = torch.arange(8.)
        assert torch.allclose(out.cpu(), xc.cumsum(0) + xc.sum() + xc.sigmoid())
    print("ok")
    """
)


def test_triton_imported_before_install_library_functions_included(tmp_path):
    """Triton's own @jit library (tl.cumsum, tl.sum, tl.sigmoid) was built in compiled mode at
    import: it is rerouted to the interpreter too."""
    import subprocess

    script = tmp_path / "triton_first.py"
    script.write_text(TRITON_FIRST)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]


DRIVER_PROGRAM = textwrap.dedent(
    """
    import torch, triton, triton.language as tl
    from triton.language import target_info

    driver = triton.runtime.driver.active   # Triton's NVIDIA driver would assert for libcuda.so here
    target = driver.get_current_target()
    props = driver.utils.get_device_properties(0)
    print("target", target.backend, target.arch, target.warp_size)
    print("props", props["max_shared_mem"], props["multiprocessor_count"], props["warpSize"])
    print("device", driver.get_current_device(), driver.get_active_torch_device())

    @triton.jit
    def k(out_ptr):
        # traced under the driver: target_info asks driver.active for the target
        if target_info.cuda_capability_geq(9, 0):
            tl.store(out_ptr, 90)
        else:
            tl.store(out_ptr, 1)

    out = torch.zeros(1, dtype=torch.int32, device="cuda")
    k[(1,)](out)
    print("kernel", int(out.cpu()[0]))
    """
)


def test_triton_driver_reports_a_cuda_target_without_libcuda(tmp_path):
    """Under `syncscope run --device sim`, `torch.cuda.is_available()` is True, so Triton's NVIDIA
    driver would call itself active and `driver.active` would assert for libcuda.so (there is none
    on this machine): the simulated device's driver answers instead."""
    import subprocess

    script = tmp_path / "driver_program.py"
    script.write_text(DRIVER_PROGRAM)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    report = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "-o", str(report), str(script)],
        capture_output=True, text=True, timeout=300, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert "target cuda 90 32" in lines
    assert "props 232448 132 32" in lines
    assert "device 0 cuda:0" in lines
    assert "kernel 90" in lines


def test_triton_driver_is_put_back_and_refuses_what_needs_a_gpu():
    from triton.runtime.driver import driver as config

    from syncscope.runtime.sim.dispatch import SimulatedDeviceError

    before = (config.__dict__["_default"], config.__dict__["_active"])
    with syncscope.trap(device="sim"):
        active = triton.runtime.driver.active
        assert type(active).__name__ == "SimulatedCudaDriver"
        assert active.get_current_target().backend == "cuda"
        assert active.map_python_to_cpp_type("*fp32") == "CUdeviceptr"
        with pytest.raises(SimulatedDeviceError, match="needs a real CUDA driver"):
            active.utils.load_binary("k", b"", 0, 0)
        with pytest.raises(SimulatedDeviceError, match="benchmarking"):
            active.get_benchmarker()(lambda: None, quantiles=[0.5])
    assert (config.__dict__["_default"], config.__dict__["_active"]) == before
