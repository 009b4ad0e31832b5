"""Conversions and views that work under `no_grad` work under `torch.inference_mode()` too, with
plain CPU's values (the issue's case: `.to(device=x.device, dtype=torch.bool)` raised
"cannot run aten::to.device"); inference tensors and version counters behave as torch's."""

from __future__ import annotations

import pytest
import torch

import syncscope
from tests.sim_grad_modes import grad_mode  # noqa: F401

pytestmark = pytest.mark.usefixtures("grad_mode")

CASES = {
    "to_device_dtype": lambda x, d: x.to(device=x.device, dtype=torch.bool),
    "to_device_positional": lambda x, d: x.to(x.device, torch.long),
    "to_same_device": lambda x, d: x.to(d),
    "to_other_tensor": lambda x, d: x.to(torch.ones(1, dtype=torch.float16, device=d)),
    "to_dtype": lambda x, d: x.to(torch.float16),
    "type_as": lambda x, d: x.int().type_as(x),
    "transpose_contiguous": lambda x, d: x.t().contiguous(),
    "expand_reshape": lambda x, d: x.unsqueeze(0).expand(2, 3, 4).reshape(6, 4),
    "detach": lambda x, d: x.detach(),
    "slice_view": lambda x, d: (x + 1).view(-1)[2:7],
    "where_scalar": lambda x, d: torch.where(x > 1, x, 0.0),
    "masked_fill": lambda x, d: x.masked_fill(x > 1, -1.0),
    "index_select": lambda x, d: x.index_select(0, torch.tensor([2, 0], device=d)),
    "pad": lambda x, d: torch.nn.functional.pad(x, (1, 0)),
    "cat": lambda x, d: torch.cat([x, x * 2], dim=1),
    "bool_mask": lambda x, d: x[x > 1],
}


@pytest.mark.parametrize("case", list(CASES))
def test_conversions_and_views_match_cpu(case):
    base = torch.arange(12.0).view(3, 4)
    want = CASES[case](base.clone(), "cpu")
    with syncscope.trap(device="sim"):
        x = base.cuda()
        got = CASES[case](x, x.device)
        assert got.is_cuda
        got = got.cpu()
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_inference_tensors_and_version_counters():
    with syncscope.trap(device="sim"), torch.inference_mode(False):
        normal = torch.zeros(4, device="cuda")
        with torch.inference_mode():
            view = normal.view(2, 2)
            made = torch.ones(4, device="cuda")
            assert not view.is_inference() and made.is_inference()
            normal.add_(1)  # an in-place update of a normal tensor is allowed here, as on CPU
        assert made.is_inference() and not normal.is_inference()
        with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
            made.add_(1)
        assert normal.tolist() == [1.0] * 4


@pytest.mark.parametrize("case", ["where_scalar", "to_device_dtype", "masked_fill", "pad", "bool_mask"])
def test_a_cuda_build_keeps_every_piece_of_a_composite_on_the_simulated_device(case, monkeypatch):
    # On a CUDA build the pieces of a composite (where(c, x, 0.)'s scalar) would allocate on the
    # real GPU, found by no failure: the simulated device catches every piece there. The CPU build
    # runs the same path when told it has CUDA kernels; on a CUDA build this is the default.
    from syncscope.runtime.sim import dispatch

    monkeypatch.setattr(dispatch, "_REAL_CUDA_KERNELS", True)
    monkeypatch.setattr(dispatch, "_allocates_alone", set())
    base = torch.arange(12.0).view(3, 4)
    want = CASES[case](base.clone(), "cpu")
    with syncscope.trap(device="sim"):
        x = base.cuda()
        got = CASES[case](x, x.device)
        assert type(got).__name__ == "SimulatedCudaTensor"
        got = got.cpu()
    assert got.dtype == want.dtype and torch.equal(got, want)
    assert dispatch._allocates_alone == set()  # nothing was found by failing
