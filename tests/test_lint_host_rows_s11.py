"""Host data, session 11 (branch `s-host`). Each VALID package has INVALID twins that stay
reported.

1. The names a tuple assignment unpacks from one row of a parameter (`h, w = img_sizes[i]`) are
   still that parameter's data, as `t, h, w = row` and `n = img_sizes[i][0]` already were: a
   sync on them happens only where a caller passes device data (SGLang's Phi-4-MM image
   encoder, whose only caller joins the processor's `image_sizes` on the host).
2. `torch.tensor([...], device=device)` of a list written out there (Python numbers, fields,
   `int(flag)`) reaches a GPU only for a GPU `device`: a call passing `device="cpu"` builds a host
   tensor and copies nothing (SGLang's `MLPSyncBatchInfo.finalize_local` ->
   `_get_local_tensor(device="cpu")`), as `torch.from_numpy(a).to(device)` was already
   (device_params.py).
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

ENCODER = """
import torch
from torch import nn

class Encoder(nn.Module):
    def forward(self, pixels: torch.Tensor, image_sizes: torch.Tensor):
        img_sizes = image_sizes
        out = []
        for i in range(pixels.shape[0]):
            h, w = img_sizes[i]
            h = h // 14
            n = h * w
            out.append(pixels[i, :n])
        return out

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()

    def forward(self, pixels: torch.Tensor, sizes: list):
        image_sizes = torch.tensor(sizes)
        return self.encoder(pixels, image_sizes)
"""


def lines(run, path: str) -> list[int]:
    return sorted({line for at, line, _ in where(run) if at == path})


def test_rows_unpacked_from_a_host_parameter_are_host(tmp_path):
    run = lint_package(tmp_path, {"model.py": ENCODER})
    assert lines(run, "pkg/model.py") == []


def test_rows_unpacked_from_a_device_parameter_are_reported(tmp_path):
    model = ENCODER.replace("torch.tensor(sizes)", "torch.tensor(sizes).to(pixels.device)")
    run = lint_package(tmp_path, {"model.py": model})
    assert 13 in lines(run, "pkg/model.py")


def test_rows_of_a_name_rebound_to_device_data_are_reported(tmp_path):
    model = ENCODER.replace("img_sizes = image_sizes", "img_sizes = image_sizes.to(pixels.device)")
    run = lint_package(tmp_path, {"model.py": model})
    assert 13 in lines(run, "pkg/model.py")


INFO = """
import torch
from dataclasses import dataclass

@dataclass
class Info:
    num_tokens: int
    flag: bool
    local_cpu: torch.Tensor = None

    def _local(self, device, dtype=torch.int64) -> torch.Tensor:
        return torch.tensor(
            [self.num_tokens, int(self.flag)],
            device=device,
            dtype=dtype,
        )

    def finalize_local(self):
        self.local_cpu = self._local(device="cpu").view(1, -1)
"""

STEP = """
import torch
from pkg.info import Info

class Scheduler:
    def get_next_batch_to_run(self, n: int):
        info = Info(num_tokens=n, flag=True)
        info.finalize_local()
        return info
"""


def test_a_list_tensor_built_for_a_cpu_device_parameter_is_no_sync(tmp_path):
    run = lint_package(tmp_path, {"info.py": INFO, "scheduler.py": STEP})
    assert lines(run, "pkg/info.py") == []
    assert lines(run, "pkg/scheduler.py") == []


def test_a_list_tensor_built_for_a_gpu_device_is_reported(tmp_path):
    run = lint_package(tmp_path, {"info.py": INFO.replace('device="cpu"', 'device="cuda"'), "scheduler.py": STEP})
    assert lines(run, "pkg/info.py") == [12, 19]
    assert lines(run, "pkg/scheduler.py") == [8]


def test_a_list_that_reads_a_tensor_is_not_guarded(tmp_path):
    # `self.counts.sum()` may read a device tensor even for `device="cpu"`: the line is no copy only
    info = INFO.replace("    flag: bool\n", "    flag: bool\n    counts: torch.Tensor = None\n").replace(
        "[self.num_tokens, int(self.flag)]", "[self.num_tokens, int(self.counts[0])]")
    step = STEP.replace("flag=True)", "flag=True, counts=torch.ones(2, device='cuda'))")
    run = lint_package(tmp_path, {"info.py": info, "scheduler.py": step})
    assert lines(run, "pkg/info.py") == [13, 14, 20]
    assert lines(run, "pkg/scheduler.py") == [8]


def test_a_number_read_beside_the_list_is_not_guarded(tmp_path):
    # `int(self.counts)` outside the list reads a tensor whatever `device` is
    info = INFO.replace("    flag: bool\n", "    flag: bool\n    counts: torch.Tensor = None\n").replace(
        "            dtype=dtype,\n        )", "            dtype=dtype,\n        )[: int(self.counts)]")
    step = STEP.replace("flag=True)", "flag=True, counts=torch.ones((), device='cuda'))")
    run = lint_package(tmp_path, {"info.py": info, "scheduler.py": step})
    assert 17 in lines(run, "pkg/info.py")
    assert lines(run, "pkg/scheduler.py") == [8]
