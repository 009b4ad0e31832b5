"""A copy to the device a host tensor names is no copy (session 17, devices.device_owner).

`torch.tensor([0], device=seqlen.device)` copies its host list to wherever `seqlen` lives: where
`seqlen` is made of a parameter that every call passes host memory for (SGLang's MiniCPM-V 4.6
ViT, `compute_cu_seqlens(target_sizes)` of the processor's CPU `tgt_sizes`), it builds a host
tensor. SYN401 now reports the copy on the tensor whose `.device` it names, so the host-fed
parameter facts (wholeprogram.host_fed, offpaths.py) and a helper's host result decide it as
they decide a read of that tensor. Each VALID package has an INVALID twin that stays reported.
"""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

MODEL = """
import torch


class Tower(torch.nn.Module):
    @staticmethod
    def compute_cu_seqlens(target_sizes: torch.Tensor):
        seqlen = MADE
        return torch.cat([torch.tensor([0], device=DEVICE, dtype=torch.int32), torch.cumsum(seqlen, dim=0)])

    def forward(self, x: torch.Tensor, target_sizes: torch.Tensor):
        cu = self.compute_cu_seqlens(target_sizes)
        return x[: cu.shape[0]]


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.vpm = Tower()

    def forward(self, x: torch.Tensor, sizes: list):
        tgt_sizes = torch.tensor(sizes)
        return self.vpm(x, SIZES)
EXTRA
"""

COPY_LINE = 9  # `torch.tensor([0], device=seqlen.device, ...)`
CALL_LINE = 12  # `self.compute_cu_seqlens(target_sizes)`
MADE = "(target_sizes[:, 0] * target_sizes[:, 1]).to(torch.int32)"


def flagged(tmp_path, sizes="tgt_sizes", made=MADE, device="seqlen.device", extra=""):
    source = MODEL.replace("SIZES", sizes).replace("MADE", made).replace("DEVICE", device).replace("EXTRA", extra)
    return lines(lint_package(tmp_path, {"model.py": source}), "pkg/model.py")


def test_a_copy_to_the_device_of_host_sizes_is_no_copy(tmp_path):
    # VALID: every call passes the host `tgt_sizes`, so `seqlen.device` is the CPU
    assert flagged(tmp_path) == []


def test_device_sizes_stay(tmp_path):
    # INVALID twin: the one call passes device sizes
    assert flagged(tmp_path, sizes="tgt_sizes.cuda()") == [COPY_LINE, CALL_LINE, 23]


def test_a_tensor_the_helper_moves_to_the_device_stays(tmp_path):
    # INVALID twin: host sizes, but the helper moves them before naming their device
    assert flagged(tmp_path, made="target_sizes.cuda()") == [COPY_LINE, CALL_LINE]


def test_a_helper_result_not_known_as_a_tensor_stays(tmp_path):
    # INVALID twin: `seqlen` is a helper's result the function does not know to be a tensor
    # (it could be a module or another object whose `.device` is the GPU's): kept, even where
    # the helper returns host memory
    host = "\n\ndef make_lens(n) -> torch.Tensor:\n    return torch.ones(n, dtype=torch.int32)\n"
    assert COPY_LINE in flagged(tmp_path, made="make_lens(4)", extra=host)


def test_the_device_of_an_object_that_may_be_no_tensor_stays(tmp_path):
    # INVALID twin: `device=model.device` of a module the caller builds (a Python object to the
    # callers' facts, not host memory): no evidence where its device is
    made = "target_sizes.to(torch.int32)"
    helper = "\n\ndef first(model, n: int):\n    return torch.tensor([n], device=model.device)\n"
    source_extra = helper + "\n\nclass Head(torch.nn.Module):\n    def forward(self, x: torch.Tensor):\n" \
        "        return first(Tower(), 3)\n"
    found = flagged(tmp_path, made=made, extra=source_extra)
    assert line_of(MODEL.replace("EXTRA", source_extra), "device=model.device") in found


def test_a_field_of_the_object_keeps_its_own_reading(tmp_path):
    # INVALID twin: `device=self.buf.device` of a field made on the device: not the parameter's
    extra = "\n\nclass Cache(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n" \
        "        self.buf = torch.zeros(4, device='cuda')\n\n    def forward(self, n: int):\n" \
        "        return torch.tensor([n], device=self.buf.device)\n"
    found = flagged(tmp_path, extra=extra)
    assert line_of(MODEL.replace("EXTRA", extra), "device=self.buf.device") in found


def line_of(source: str, text: str) -> int:
    return next(n for n, row in enumerate(source.splitlines(), 1) if text in row)


BRANCHES = """
import torch
from typing import Optional


class Tower(torch.nn.Module):
    def compute_cu_seqlens(self, tgt_sizes: Optional[torch.Tensor] = None, embeds: Optional[torch.Tensor] = None):
        if tgt_sizes is not None:
            seqlen = tgt_sizes[:, 0] * tgt_sizes[:, 1]
        elif embeds is not None:
            seqlen = torch.full((embeds.shape[0],), embeds.shape[1], dtype=torch.int32, device=embeds.device)
        else:
            raise ValueError("no sizes")
        return torch.tensor([0], device=seqlen.device, dtype=torch.int32)

    def forward(self, x: torch.Tensor, tgt_sizes: Optional[torch.Tensor] = None):
        return self.compute_cu_seqlens(tgt_sizes, x)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.vpm = Tower()

    def forward(self, x: torch.Tensor, sizes: list):
        return self.vpm(x, None)
"""


def test_a_tensor_put_on_the_device_in_another_arm_stays(tmp_path):
    # INVALID twin: `seqlen` is the parameter's data in one arm and a device tensor in the other
    # (the caller passes None, so the device arm runs): the parameter does not decide its device
    found = lines(lint_package(tmp_path, {"model.py": BRANCHES}), "pkg/model.py")
    assert line_of(BRANCHES, "device=seqlen.device") in found

