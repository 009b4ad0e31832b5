"""Type guards a call's own argument decides, session 17 (branch `s-callguard`, typeargs.py).

A callee's block under a type test on a parameter (`isinstance(p, (int, float))`,
`torch.is_tensor(p)`) is not taken by THIS call when what it passes rules the test out, even
where other callers leave the test open (numberguards.py decides it only for every caller at
once). SGLang's `NVFP4KVQuantizeUtil.quantize(tensor, global_scale)` copies a scale to the
device only for a Python number; the KV pools pass `self.global_scale`, a field the tree only
ever fills with `torch.ones(1, device=device)`, while another caller hands on its own
parameter. VALID: the pool's call (a device field, a subscript of one, a `torch` factory's
result, a tensor where `p is None` is tested); INVALID twins: the caller passing a literal
number, a field also given a number somewhere in the tree, a name bound on two paths (a
device field or a number), a field test that needs more than "no number" (`not
torch.is_tensor(p)`: a device field may be None), and a field of the same name given a number
by another file.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

QUANT = """
import torch


class Quant:
    @staticmethod
    def quantize(tensor: torch.Tensor, global_scale{default}):
        if {test}:
            {copied}
        return tensor * global_scale
"""

COPY = "global_scale = torch.tensor([global_scale], dtype=torch.float32, device=tensor.device)"

POOL = """
import torch
from torch import nn
from pkg.quant import Quant


class Pool(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.global_scale = torch.ones(1, dtype=torch.float32, device=device)
        self.scales = torch.ones(4, dtype=torch.float32, device=device)

    def forward(self, x: torch.Tensor, layer: int, flag: bool):
        {body}
        return Quant.quantize(x, {arg})


class Other(nn.Module):
    def forward(self, x: torch.Tensor, scale):
        return Quant.quantize(x, {other})
"""


def _pool(tmp_path, arg="self.global_scale", test="isinstance(global_scale, (int, float))", body="pass",
          files=None, default="", other="scale", copied=COPY, **overrides):
    sources = {"quant.py": QUANT.format(test=test, default=default, copied=copied),
               "pool.py": POOL.format(arg=arg, body=body, other=other)}
    sources.update(files or {})
    return lint_package(tmp_path, sources, **overrides)


def _reaches(found, line):
    # a call site that reaches the copy: SYN602, or SYN601 since the copy to `device=x.device`
    # is reported on `x` (session 17, s-host17's `devices.device_owner`)
    return any(f[:2] == ("pkg/pool.py", line) and f[2] in ("SYN601", "SYN602") for f in found)


def _call(run):
    return [f for f in run.findings if f.site.path == "pkg/pool.py" and f.site.line == 15]


def test_a_device_field_rules_out_a_number_test_for_this_call(tmp_path):
    found = where(_pool(tmp_path))
    assert not [f for f in found if f[:2] == ("pkg/pool.py", 15)], found
    # the copy itself stays: another caller hands on a parameter nobody decides (a call site
    # is SYN601 since the copy to `device=x.device` is reported on `x`, s-host17, else SYN602)
    assert ("pkg/quant.py", 9, "SYN401") in found
    assert [f for f in found if f[:2] == ("pkg/pool.py", 20) and f[2] in ("SYN601", "SYN602")], found
    cold = _call(_pool(tmp_path, include_cold=True))
    assert cold and "types rule out the branch of `quantize`" in cold[0].cold


def test_a_subscript_of_a_device_field_rules_it_out_too(tmp_path):
    assert not _reaches(where(_pool(tmp_path, arg="self.scales[layer : layer + 1]")), 15)


def test_a_torch_factory_result_rules_out_a_tensor_test(tmp_path):
    found = where(_pool(tmp_path, arg="torch.ones(1, device=x.device)", test="not torch.is_tensor(global_scale)"))
    assert not _reaches(found, 15)
    assert ("pkg/quant.py", 9, "SYN401") in found


def test_a_tensor_argument_rules_out_a_none_test(tmp_path):
    # another caller leaves the parameter out: the None branch is no per-function guard
    found = where(_pool(tmp_path, arg="torch.cat([x, x])", test="global_scale is None", default="=None",
                        other="*[scale][:0]", copied="print(tensor.abs().max().item())"))
    assert ("pkg/pool.py", 15, "SYN601") not in found
    assert ("pkg/pool.py", 20, "SYN601") in found
    assert ("pkg/quant.py", 9, "SYN201") in found


def test_invalid_a_parameter_passed_on_under_a_none_test_keeps_the_sync(tmp_path):
    found = where(_pool(tmp_path, arg="x", test="global_scale is None", default="=None",
                        other="*[scale][:0]", copied="print(tensor.abs().max().item())"))
    assert ("pkg/pool.py", 15, "SYN601") in found


def test_invalid_a_literal_number_keeps_the_copy(tmp_path):
    assert _reaches(where(_pool(tmp_path, arg="0.5")), 15)


def test_invalid_a_name_bound_on_two_paths_keeps_the_copy(tmp_path):
    found = where(_pool(tmp_path, arg="scale", body="scale = self.global_scale if flag else 1.0"))
    assert _reaches(found, 15)
    found = where(_pool(tmp_path, arg="self.global_scale if flag else 1.0"))
    assert _reaches(found, 15)


def test_invalid_a_device_field_may_be_none_under_a_tensor_test(tmp_path):
    found = where(_pool(tmp_path, test="not torch.is_tensor(global_scale)"))
    assert _reaches(found, 15)


def test_invalid_a_field_given_a_number_elsewhere_keeps_the_copy(tmp_path):
    other = "class Config:\n    def __init__(self):\n        self.global_scale = 1.0\n"
    found = where(_pool(tmp_path, files={"config.py": other}))
    assert _reaches(found, 15)


def test_invalid_a_field_given_a_number_by_this_file_keeps_the_copy(tmp_path):
    found = where(_pool(tmp_path, body="self.global_scale = 2.0"))
    assert _reaches(found, 15)


def test_invalid_an_is_tensor_of_the_package_is_no_type_test(tmp_path):
    quant = QUANT.format(test="not is_tensor(global_scale)", default="", copied=COPY).replace(
        "import torch\n", "import torch\nfrom pkg.util import is_tensor\n", 1)
    run = lint_package(tmp_path, {"quant.py": quant,
                                  "util.py": "def is_tensor(x):\n    return hasattr(x, 'shape')\n",
                                  "pool.py": POOL.format(arg="torch.ones(1, device=x.device)", body="pass", other="scale")})
    assert _reaches(where(run), 15)
