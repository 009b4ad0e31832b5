"""A wrapper that hands its own `**kwargs` on whole passes what its callers put in it, no more:
a helper that syncs on `k_scale` is a sync where a caller passes a device `k_scale` (by keyword,
through any number of such wrappers), not in the wrapper itself (issue 24 class 4: vLLM 0.33.0
third_party/fmha_sm100/api.py:1226, `_fmha_sm100(q, ..., **kwargs)` where every caller passes a
Python float). A wrapper that puts something into its `**kwargs` first, or one nothing in the
tree calls, stays flagged at its own call. Only the call sites are compared: the helper's own
line is read on its parameter's annotation (`float | torch.Tensor`), as before."""

from __future__ import annotations

from test_lint_host_facts import lint_package, where

KERNEL = """
import torch

def _run(q, plan, k_scale: float | torch.Tensor = 1.0, sm_scale: float = 1.0):
    return q * float(k_scale * sm_scale)

def run(q, plan, out=None, **kwargs):
{body}
    return _run(q, plan, **kwargs)
"""

MODEL = """
import torch
from pkg.kernel import run

class Attention(torch.nn.Module):
    def forward(self, q, plan, scale_tensor: torch.Tensor):
        return run(q, plan, k_scale={scale})
"""


def lint(tmp_path, scale: str, body: str = "    pass", model: bool = True):
    """(file, code) of the call-site findings."""
    files = {"kernel.py": KERNEL.format(body=body)}
    if model:
        files["model.py"] = MODEL.format(scale=scale)
    return [(path.rsplit("/", 1)[-1], code) for path, _, code in where(lint_package(tmp_path, files))
            if code in ("SYN601", "SYN602")]


def test_a_python_value_through_forwarded_kwargs_is_no_sync(tmp_path):
    assert lint(tmp_path, "0.5") == []


def test_a_device_value_through_forwarded_kwargs_is_flagged_at_the_caller(tmp_path):
    assert lint(tmp_path, "scale_tensor") == [("model.py", "SYN601")]


def test_a_wrapper_that_stores_into_its_kwargs_is_flagged_itself(tmp_path):
    body = '    kwargs["k_scale"] = torch.ones(1, device="cuda")'
    assert lint(tmp_path, "0.5", body=body) == [("kernel.py", "SYN601")]


def test_a_wrapper_nothing_calls_is_flagged_itself(tmp_path):
    assert lint(tmp_path, "", model=False) == [("kernel.py", "SYN601")]


def test_host_memory_through_forwarded_kwargs_is_host_data_in_the_helper(tmp_path):
    # every call into the wrapper passes a CPU tensor by that name: the helper's own line on
    # `k_scale` is host data too (host_fed through the handed-on names: kwargs_forwards.py)
    files = {"kernel.py": KERNEL.format(body="    pass"), "model.py": MODEL.format(scale="torch.ones(1)")}
    assert where(lint_package(tmp_path, files)) == []


def test_device_memory_through_forwarded_kwargs_keeps_the_helpers_line(tmp_path):
    files = {"kernel.py": KERNEL.format(body="    pass"), "model.py": MODEL.format(scale='torch.ones(1, device="cuda")')}
    assert ("pkg/kernel.py", 5, "SYN205") in where(lint_package(tmp_path, files))
