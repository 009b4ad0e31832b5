"""A comparison of a Python value with a parameter's data is that parameter's data (session 16,
context.compared). Each VALID package has an INVALID twin that stays reported.

vLLM's MiniCPM-V 2.0: `get_abs_pos(abs_pos, tgt_size)` tests `src_size == tgt_size[0]` with
`src_size = int(math.sqrt(...))`; its one caller, `Resampler2.forward`, passes its own
`tgt_sizes` on, and the resampler is held in a field the base class fills from
`self.init_resampler()`, which only the subclass's override builds (`-> nn.Module`), called with
a tuple of Python ints computed from a tensor's shape.
"""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

RESAMPLER = """
import math
import torch
from torch import nn


def get_abs_pos(abs_pos: torch.Tensor, tgt_size: torch.Tensor | int) -> torch.Tensor:
    src_size = int(math.sqrt(abs_pos.size(0)))
    if isinstance(tgt_size, int):
        tgt_size = (tgt_size, tgt_size)
    if LEFT == tgt_size[0] and src_size == tgt_size[1]:
        return abs_pos
    return abs_pos * 2


class Resampler(nn.Module):
    def __init__(self, grid_size: int):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.zeros(grid_size))

    def forward(self, x: torch.Tensor, tgt_sizes: torch.Tensor | None = None) -> torch.Tensor:
        if tgt_sizes is None:
            tgt_sizes = int(math.sqrt(x.size(1)))
        pos_embed = get_abs_pos(self.pos_embed, tgt_sizes).to(device=x.device, dtype=x.dtype)
        return x + pos_embed
"""

COMPARED_LINE = 11  # `if LEFT == tgt_size[0] and src_size == tgt_size[1]:`

MODEL = """
import math
import torch
from torch import nn
from pkg.resampler import Resampler


class Base(nn.Module):
    def __init__(self, config):
        super().__init__()
        if config.vision:
            self.resampler = self.init_resampler(4, prefix="resampler")

    def init_resampler(self, embed_dim: int, prefix: str = "") -> nn.Module:
        raise NotImplementedError

    def get_vision_hidden_states(self, pixel_values):
        raise NotImplementedError

    def forward(self, pixel_values):
        return self.get_vision_hidden_states(pixel_values)


class V2(Base):
    def init_resampler(self, embed_dim: int, prefix: str = "") -> nn.Module:
        with torch.device("cpu"):
            resampler = Resampler(grid_size=embed_dim)
        return resampler.to(dtype=torch.get_default_dtype())

    def get_vision_hidden_states(self, pixel_values) -> torch.Tensor:
        res = []
        for pixel_value in pixel_values:
            H, W = pixel_value[0].shape[-2:]
            tgt_size = (math.ceil(H / 14), math.ceil(W / 14))
            res.append(self.resampler(pixel_value, SIZES))
        return torch.vstack(res)
"""


def flagged(tmp_path, left="src_size", sizes="tgt_size"):
    files = {"resampler.py": RESAMPLER.replace("LEFT", left), "model.py": MODEL.replace("SIZES", sizes)}
    return lines(lint_package(tmp_path, files), "pkg/resampler.py")


def test_a_python_value_compared_with_host_sizes(tmp_path):
    # VALID: `src_size` is an int, `tgt_size` is what the one caller passes: Python ints
    assert flagged(tmp_path) == []


def test_a_literal_compared_with_host_sizes(tmp_path):
    # VALID too: a number on the left
    assert flagged(tmp_path, left="24") == []


def test_device_sizes_compared_stay(tmp_path):
    # INVALID twin: the caller passes the sizes on the device
    assert COMPARED_LINE in flagged(tmp_path, sizes="torch.tensor(tgt_size).cuda()")


def test_a_tensor_compared_with_host_sizes_stays(tmp_path):
    # INVALID twin: the left operand is a tensor of the helper's own (`abs_pos.sum()`): the
    # comparison is where that tensor is, whatever the caller passes
    assert COMPARED_LINE in flagged(tmp_path, left="abs_pos.sum()")


def test_a_local_device_tensor_compared_stays(tmp_path):
    # INVALID twin: a name the walk holds no Python value in (a tensor made on the device)
    files = {"resampler.py": RESAMPLER.replace("LEFT", "src_t").replace(
        "    if isinstance(tgt_size, int):", "    src_t = torch.ones(1, device=abs_pos.device)\n    if isinstance(tgt_size, int):"),
        "model.py": MODEL.replace("SIZES", "tgt_size")}
    assert COMPARED_LINE + 1 in lines(lint_package(tmp_path, files), "pkg/resampler.py")


SIBLING = """

class Other(nn.Module):
    def forward(self, x: torch.Tensor, tgt_sizes: torch.Tensor) -> torch.Tensor:
        return x


class V3(Base):
    def get_vision_hidden_states(self, pixel_values) -> torch.Tensor:
        sizes = torch.tensor([4, 4], device="cuda")
        return self.resampler(pixel_values, sizes)
"""


def sibling(tmp_path, base_builds: str):
    model = MODEL.replace("SIZES", "tgt_size").replace(
        "    def init_resampler(self, embed_dim: int, prefix: str = \"\") -> nn.Module:\n        raise NotImplementedError",
        f"    def init_resampler(self, embed_dim: int, prefix: str = \"\") -> nn.Module:\n        return {base_builds}", 1)
    files = {"resampler.py": RESAMPLER.replace("LEFT", "src_size"), "model.py": model + SIBLING}
    return lines(lint_package(tmp_path, files), "pkg/resampler.py")


def test_a_sibling_without_the_override_gets_the_base_class(tmp_path):
    # VALID: V3 inherits the base's `init_resampler`, which builds `Other`: its device sizes
    # never reach `Resampler`
    assert sibling(tmp_path, "Other()") == []


def test_a_sibling_whose_base_builds_the_same_class_stays(tmp_path):
    # INVALID twin: the base's own method builds `Resampler` too: V3's device sizes reach it
    assert COMPARED_LINE in sibling(tmp_path, "Resampler(grid_size=embed_dim)")
