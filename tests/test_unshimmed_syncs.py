"""A sync torch raises in C++ under a torch call that the real-GPU detector does not shim
(`torch.full(..., fill_value=cuda_scalar)` reads its fill value on the host) arrives on a GPU as
torch's bare sync warning, kind `other`; the simulated device names it so too, while a read
through Python's number protocol (`x.softmax(dim=t)`, `x[:t]`) stays `item` on both, as does a
Python-level torch function's (found by the parity suite: Hugging Face's beam search,
transformers/generation/utils.py:3226). And copies of no element are no syncs on either device."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import syncscope
from syncscope.events import SyncKind as K
from tests.catalog.expectations import expectations
from tests.marked_lines import events_in, marked_line
from tests.sim_grad_modes import grad_mode  # noqa: F401
from tests.unshimmed_syncs_program import run_cases

PROGRAM = Path(__file__).with_name("unshimmed_syncs_program.py")


def _expected() -> set[tuple[int, str]]:
    return {(line, kind) for line, kind in expectations(PROGRAM).items() if kind}


def _got(events, path) -> set[tuple[int, str]]:
    return {(e.site.line, e.kind) for e in events_in(events, str(path))}


@pytest.mark.usefixtures("grad_mode")
def test_the_simulated_device_names_each_case_as_the_gpu_detector_does():
    with syncscope.trap(device="sim") as t:
        run_cases("cuda")
    assert _got(t.events, PROGRAM) == _expected()


@pytest.mark.usefixtures("grad_mode")
def test_the_kinds_that_stay_as_they_were():
    with syncscope.trap(device="sim") as t:
        x = torch.arange(4.0, device="cuda")
        # a Python function of torch keeps its kind (torch.unique is one; a shim wraps it on a GPU)
        unique = torch.unique(x)  # python-function
        scalar = unique.sum()
        scalar.item()  # item-call
        int(scalar)  # int-call
        if scalar:  # bool-call
            pass
        repr(x)  # repr-call
        torch.nn.functional.one_hot(torch.arange(3, device="cuda"))  # one-hot
        x.tolist()  # tolist-call
        y = x.clone()
        y[1] = 5.0  # scalar-store
        weight = torch.nn.Parameter(torch.zeros(3, device="cuda"))
        with torch.no_grad():
            weight[1] = 5.0  # parameter-store
    here = __file__
    got = {(e.site.line, e.kind) for e in events_in(t.events, here)}
    line = lambda marker: marked_line(here, marker)  # noqa: E731
    assert got == {
        (line("python-function"), K.DYNAMIC_SHAPE),
        (line("item-call"), K.ITEM),
        (line("int-call"), K.ITEM),
        (line("bool-call"), K.ITEM),
        (line("repr-call"), K.CPU_COPY),  # printing a device tensor: as before this change
        (line("one-hot"), K.DYNAMIC_SHAPE),
        (line("tolist-call"), K.TOLIST),
        (line("scalar-store"), K.SCALAR_STORE),
        (line("parameter-store"), K.SCALAR_STORE),  # through aten and sync_model.refine (not the fast path)
    }


def test_the_fill_value_read_is_named_after_the_factory():
    with syncscope.trap(device="sim") as t:
        n = torch.tensor(3, device="cuda")
        filled = torch.full((2,), fill_value=n, device="cuda")
        assert filled.is_cuda and filled.tolist() == [3, 3]
    assert [(e.kind, e.api) for e in t.events] == [(K.H2D_COPY, "torch.tensor"), (K.OTHER, "torch.full"), (K.TOLIST, "Tensor.tolist")]


def test_the_number_conversions_named_are_the_ones_the_gpu_detector_shims():
    from syncscope.runtime import cuda
    from syncscope.runtime.sim import tensor

    shimmed = cuda.shimmed_api_names()
    assert shimmed == {spec.api for spec in cuda._shim_specs()}
    conversions = {"__index__", "__int__", "__float__", "__bool__", "__complex__"}
    assert {f"Tensor.{name}" for name in tensor.NUMBER_CONVERSIONS} == {api for api in shimmed if api.split(".")[-1] in conversions}


@pytest.mark.gpu
def test_the_gpu_detector_names_each_case_as_expected():
    run_cases("cuda")  # warm-up outside the trap: lazy CUDA init, kernels loaded
    with syncscope.trap(device="cuda") as t:
        run_cases("cuda")
    assert _got(t.events, PROGRAM) == _expected()
