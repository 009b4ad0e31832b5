"""Every simulated-device test case runs with autograd on, under `torch.no_grad()` and under
`torch.inference_mode()` (the way most inference code runs, vLLM's model runner included): what
works in one must work in the others, with the same numbers and the same syncs.

Use: `from tests.sim_grad_modes import grad_mode  # noqa: F401` and
`pytestmark = pytest.mark.usefixtures("grad_mode")` in the test module."""

from __future__ import annotations

import contextlib

import pytest
import torch

MODES = {
    "grad": contextlib.nullcontext,
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
}


@pytest.fixture(params=list(MODES))
def grad_mode(request):
    with MODES[request.param]():
        yield request.param
