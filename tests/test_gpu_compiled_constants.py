"""What the linter's compiled.py assumes, on a real GPU (run on the device machine: `pytest -m gpu`).

Inside a `torch.compile`d function, a tensor built from Python constants (a module-level tuple of
numbers, or a part of it taken with literal bounds: SGLang's `batched_dequantize` builds
`quant_tensor.new_tensor(E2M1_VALUES[:8])`) is folded into the compiled code: no host-to-device
copy per call. The same function run eagerly copies on every call. The copies are counted from
the profiler's CUDA activity (`Memcpy HtoD`), over calls made after the first (which compiles).
"""

import pytest
import torch

pytestmark = pytest.mark.gpu

E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)
CALLS = 5


def dequantize(codes: torch.Tensor) -> torch.Tensor:
    values = codes.new_tensor(E2M1_VALUES[:8], dtype=torch.float32)
    return values[(codes & 0x07).long()]


def bounded(codes: torch.Tensor) -> torch.Tensor:
    bounds = codes.new_tensor(E2M1_VALUES, dtype=torch.float32)
    return (codes.float().unsqueeze(-1) >= bounds).sum(-1)


def _copies_to_device(function, codes: torch.Tensor) -> int:
    function(codes)  # the first call compiles (and may copy the constant once)
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profile:
        for _ in range(CALLS):
            function(codes)
        torch.cuda.synchronize()
    return sum(1 for event in profile.events() if "Memcpy HtoD" in event.name)


@pytest.mark.parametrize("function", [dequantize, bounded], ids=["literal_slice", "whole_constant"])
def test_a_constant_in_a_compiled_function_is_copied_by_no_call(function):
    codes = torch.randint(0, 16, (64, 128), dtype=torch.uint8, device="cuda")
    compiled = torch.compile(function)
    assert _copies_to_device(compiled, codes) == 0
    # the control: the same function run eagerly copies its constant on every call
    assert _copies_to_device(function, codes) >= CALLS
    torch.testing.assert_close(compiled(codes), function(codes))
