"""Autocast, RNG, memory statistics and NVTX on the simulated device: `torch.autocast("cuda")` runs
with CUDA autocast's dtype rules (outputs equal to CPU autocast in the same dtype, within
tolerance) instead of killing the process in C++; `torch.cuda.amp` aliases; per-device RNG calls;
memory statistics; `torch.cuda.nvtx`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import syncscope
from tests.sim_grad_modes import grad_mode  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.usefixtures("grad_mode")


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = torch.nn.Linear(16, 48)
        self.norm = torch.nn.LayerNorm(16)
        self.mlp = torch.nn.Linear(16, 16)

    def forward(self, x):
        q, k, v = self.attn(x).view(2, 5, 3, 2, 8).unbind(2)
        a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        h = self.norm(x + a.transpose(1, 2).reshape(2, 5, 16))
        return torch.softmax(self.mlp(h), dim=-1), h


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_cuda_autocast_follows_cuda_rules_with_cpu_autocast_values(dtype):
    torch.manual_seed(0)
    block = _Block()
    x = torch.randn(2, 5, 16)
    with torch.autocast("cpu", dtype=dtype):
        ref_probs, ref_h = block(x)
    with syncscope.trap(device="sim"):
        dev = block.cuda()
        with torch.autocast("cuda", dtype=dtype):
            lin = dev.attn(x.cuda())
            probs, h = dev(x.cuda())
            joined = torch.cat([lin, x.cuda().repeat(1, 1, 3)], dim=-1)
        # CUDA's rules: linear in the autocast dtype; softmax and layer_norm in float32; cat widens
        assert lin.dtype == dtype and probs.dtype == torch.float32 and h.dtype == torch.float32
        assert joined.dtype == torch.float32
        probs, h = probs.cpu(), h.cpu()
        dev.cpu()
    tolerance = 2e-2 if dtype == torch.bfloat16 else 5e-3
    assert torch.allclose(probs, ref_probs.float(), atol=tolerance)
    assert torch.allclose(h, ref_h.float(), atol=tolerance * 10)


def test_amp_aliases_and_decorator_forms():
    with syncscope.trap(device="sim"):
        w = torch.nn.Parameter(torch.randn(8, 8, device="cuda"))
        x = torch.randn(4, 8, device="cuda")
        with pytest.warns(FutureWarning):
            legacy = torch.cuda.amp.autocast()
        with legacy:
            assert (x @ w).dtype == torch.float16
        with torch.amp.autocast("cuda", dtype=torch.bfloat16):
            assert torch.is_autocast_enabled("cuda") and (x @ w).dtype == torch.bfloat16

        @torch.autocast("cuda", dtype=torch.bfloat16)
        def step(a):
            return F.linear(a, w)

        assert step(x).dtype == torch.bfloat16
        assert not torch.is_autocast_enabled("cuda")


def test_the_cache_setting_reads_back_as_the_program_set_it():
    with syncscope.trap(device="sim"):
        with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=True):
            assert torch.is_autocast_cache_enabled()
        torch.set_autocast_cache_enabled(False)
        assert not torch.is_autocast_cache_enabled()
        torch.set_autocast_cache_enabled(True)
    assert torch.is_autocast_cache_enabled()


def test_autocast_with_weights_that_require_grad_does_not_abort(tmp_path):
    """The report's case: no_grad + nn.Linear (weights require grad) + bf16 autocast used to end in
    `terminate called after throwing an instance of 'c10::Error'`."""
    program = tmp_path / "amp_prog.py"
    program.write_text(textwrap.dedent("""
        import torch
        layer = torch.nn.Linear(8, 8).cuda()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            out = layer(torch.randn(2, 8, device="cuda"))
        print("dtype", out.dtype, "sum", float(out.float().sum()) == float(out.float().sum()))
    """))
    proc = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", str(tmp_path / "r.json"), str(program)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "dtype torch.bfloat16 sum True" in proc.stdout
    assert "terminate called" not in proc.stderr


def test_per_device_rng_is_reproducible():
    with syncscope.trap(device="sim"):
        torch.cuda.manual_seed_all(7)
        state = torch.cuda.get_rng_state()
        a = torch.randn(5, device="cuda")
        torch.cuda.set_rng_state(state)
        assert torch.equal(torch.randn(5, device="cuda").cpu(), a.cpu())
        states = torch.cuda.get_rng_state_all()
        b = torch.rand(3, device="cuda")
        torch.cuda.set_rng_state_all(states)
        assert torch.equal(torch.rand(3, device="cuda").cpu(), b.cpu())
        torch.cuda.random.manual_seed(3)  # the submodule's name is the simulated one too
        assert torch.cuda.initial_seed() == 3
        g1, g2 = torch.Generator(device="cuda"), torch.Generator(device="cuda")
        g1.manual_seed(11)
        g2.manual_seed(11)
        one = torch.randint(0, 100, (6,), device="cuda", generator=g1)
        two = torch.randint(0, 100, (6,), device="cuda", generator=g2)
        assert torch.equal(one.cpu(), two.cpu())
        with torch.random.fork_rng(device_type="cuda"):
            torch.randn(4, device="cuda")


def test_memory_statistics_and_nvtx_answer():
    with syncscope.trap(device="sim"):
        torch.cuda.reset_peak_memory_stats()
        assert torch.cuda.memory_allocated() >= 0 and torch.cuda.max_memory_allocated() >= 0
        assert torch.cuda.memory_stats()["allocated_bytes.all.peak"] == 0
        assert torch.cuda.memory.memory_reserved() >= 0
        assert "simulated" in torch.cuda.memory_summary()
        free, total = torch.cuda.mem_get_info()
        assert 0 < free <= total
        torch.cuda.empty_cache()
        torch.cuda.nvtx.range_push("step")
        torch.cuda.nvtx.mark("here")
        torch.cuda.nvtx.range_pop()
        with torch.cuda.nvtx.range("block"):
            torch.ones(2, device="cuda").add_(1)


def test_unsimulated_calls_name_themselves_and_a_way_out():
    from syncscope.runtime.sim import SimulatedDeviceError

    with syncscope.trap(device="sim"):
        with pytest.raises(SimulatedDeviceError, match=r"torch\.cuda\.current_blas_handle is not simulated.*--device cuda"):
            torch.cuda.current_blas_handle()
        if torch.version.cuda is None:
            # A CUDA build of torch sets TunableOp's flag without touching a device (nothing to
            # refuse); a CPU-only build has no TunableOp and fails, named by the simulated device.
            with pytest.raises(SimulatedDeviceError, match=r"torch\.cuda\.tunable\.enable"):
                torch.cuda.tunable.enable()
