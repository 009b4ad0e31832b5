"""A copy whose target device is a parameter (device_params.py, issue 24 "host data"): vLLM's
`make_tensor_with_pad(..., device="cpu")` builds its tensor with `torch.from_numpy(a).to(device)`,
which reaches the GPU only for a caller passing a GPU device. VALID: every per-step call passes
`"cpu"`; INVALID: a call passing a device (a literal `"cuda"` too), or a line that also syncs
otherwise, is still reported."""

from __future__ import annotations

from test_lint_scope import lint_package, where

UTILS = """
    import numpy as np
    import torch

    def make_padded(x, pad, *, device=None, pin_memory=False):
        padded = np.full((len(x), 4), pad)
        tensor = torch.from_numpy(padded).to(device)
        if pin_memory:
            tensor = tensor.pin_memory()
        return tensor

    def move(t: torch.Tensor, device=None):
        out = t.to(device)
        return out
"""

SAMPLER = """
    import torch
    from pkg.utils import make_padded

    def convert(tokens, device):
        t = make_padded(tokens, 0, device="cpu", pin_memory=True)
        return t.to(device, non_blocking=True)

    class Sampler(torch.nn.Module):
        def forward(self, logits: torch.Tensor, tokens):
            return convert(tokens, logits.device)
"""


def lines(run, path: str) -> list[int]:
    return sorted({line for at, line, _ in where(run) if at == path})


def test_a_copy_to_a_cpu_device_parameter_is_no_sync_for_a_caller_passing_cpu(tmp_path):
    run = lint_package(tmp_path, {"utils.py": UTILS, "sampler.py": SAMPLER})
    assert lines(run, "pkg/utils.py") == []
    assert lines(run, "pkg/sampler.py") == []
    cold = lint_package(tmp_path, {}, include_cold=True)
    reasons = {f.site.line: f.cold for f in cold.findings if f.site.path == "pkg/utils.py"}
    assert 7 in reasons and "device" in reasons[7]


def test_a_caller_passing_a_gpu_device_keeps_the_copy(tmp_path):
    sampler = SAMPLER.replace('device="cpu", pin_memory=True', "device=device")
    run = lint_package(tmp_path, {"utils.py": UTILS, "sampler.py": sampler})
    assert lines(run, "pkg/utils.py") == [7]
    assert 6 in lines(run, "pkg/sampler.py")


def test_a_literal_cuda_device_keeps_the_copy(tmp_path):
    sampler = SAMPLER.replace('device="cpu"', 'device="cuda"')
    run = lint_package(tmp_path, {"utils.py": UTILS, "sampler.py": sampler})
    assert lines(run, "pkg/utils.py") == [7]


def test_a_line_that_also_syncs_otherwise_is_not_guarded(tmp_path):
    # the guard covers the whole statement: `.item()` beside the copy syncs whatever `device` is
    utils = UTILS + """
    def count(lens: torch.Tensor, a, device=None):
        n = torch.from_numpy(a).to(device).shape[0] + lens.sum().item()
        return n
"""
    sampler = """
        import numpy as np
        import torch
        from pkg.utils import count

        class Sampler(torch.nn.Module):
            def forward(self, logits: torch.Tensor):
                return count(logits, np.zeros(3), "cpu")
    """
    run = lint_package(tmp_path, {"utils.py": utils, "sampler.py": sampler})
    assert lines(run, "pkg/utils.py") == [17]
    assert lines(run, "pkg/sampler.py") == [8]
