"""The items of a list a helper of another module takes as a parameter (param_items.py; vLLM
0.33.0 glmasr_utils.py `_as_list_chunk_counts`, fed the `keep_on_cpu` field `chunk_counts`).
VALID: every caller passes a host-only field, so the items are host tensors. INVALID twins stay
reported: a caller passing a Python list (which may hold CUDA tensors) or a field the runner
moves to the device."""

from __future__ import annotations

from test_lint_host_facts import INPUTS, lint_package, where

UTILS = """
import torch
from typing import cast

def as_list_counts(counts: torch.Tensor | list[int] | list[torch.Tensor]) -> list[int]:
    if isinstance(counts, torch.Tensor):
        return counts.tolist()
    if counts and isinstance(counts[0], torch.Tensor):
        tensor_counts = cast(list[torch.Tensor], counts)
        return [int(c.item()) for c in tensor_counts]
    return [int(c) for c in counts]

def sizes_from(counts, total: int) -> list[int]:
    flat = []
    for c in counts:
        flat.append(int(c.item()) if isinstance(c, torch.Tensor) else int(c))
    return flat

def normalize(counts, n: int) -> list[int]:
    if counts is None:
        return [1] * n
    return as_list_counts(counts)
"""

MODEL = """
import torch
from pkg.inputs import MultiModalFieldConfig
from pkg.utils import normalize, sizes_from

class AudioMultiModalProcessor:
    def _get_mm_fields_config(self, hf_inputs):
        return dict(chunk_counts=MultiModalFieldConfig.batched("audio", keep_on_cpu=True),
                    token_lens=MultiModalFieldConfig.batched("audio"))

class Model(torch.nn.Module):
    def embed_multimodal(self, x: torch.Tensor, **kwargs):
        counts = normalize(kwargs.get("FIELD"), x.shape[0])
        sizes = sizes_from(kwargs.get("FIELD"), x.shape[0])
        return x.split(counts), sizes
"""


def findings(tmp_path, field: str = "chunk_counts", model: str | None = None):
    source = (model or MODEL).replace("FIELD", field)
    return where(lint_package(tmp_path, {"inputs.py": INPUTS, "utils.py": UTILS, "model.py": source}))


def lines(found, path: str) -> list[int]:
    return sorted({line for at, line, _ in found if at == path})


def test_the_items_of_a_host_only_field_are_host_data(tmp_path):
    found = findings(tmp_path)
    assert lines(found, "pkg/utils.py") == []
    assert lines(found, "pkg/model.py") == []


def test_the_items_of_a_field_the_runner_moves_to_the_device_are_flagged(tmp_path):
    found = findings(tmp_path, "token_lens")
    assert {10, 11, 16} <= set(lines(found, "pkg/utils.py"))
    assert lines(found, "pkg/model.py") == [13, 14]


def test_the_items_of_a_python_list_passed_are_flagged(tmp_path):
    # a list literal is a Python value, yet its items may be CUDA tensors
    model = MODEL.replace('kwargs.get("FIELD")', '[x.sum(), x.max()]')
    found = findings(tmp_path, model=model)
    assert {10, 11, 16} <= set(lines(found, "pkg/utils.py"))
    assert lines(found, "pkg/model.py") == [13, 14]


TOWER = """
import torch

class Tower(torch.nn.Module):
    def window(self, grid_thw):
        n = 0
        for t, h, w in grid_thw:
            n += (t * h * w).item()
        return n

    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
        return x[: self.window(grid_thw)]
"""

TOWER_MODEL = """
import torch
from pkg.inputs import MultiModalFieldConfig
from pkg.tower import Tower

class VLProcessor:
    def _get_mm_fields_config(self, hf_inputs):
        return dict(image_grid_thw=MultiModalFieldConfig.batched("image", keep_on_cpu=True),
                    pixel_values=MultiModalFieldConfig.batched("image"))

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = Tower()

    def embed_multimodal(self, **kwargs):
        return self.visual(kwargs["pixel_values"], kwargs["FIELD"])
"""


def test_rows_passed_on_by_a_tensor_typed_parameter_follow_the_callers(tmp_path):
    files = {"inputs.py": INPUTS, "tower.py": TOWER}
    host = where(lint_package(tmp_path, {**files, "model.py": TOWER_MODEL.replace("FIELD", "image_grid_thw")}))
    assert lines(host, "pkg/tower.py") == []
    # fed a field the runner moves to the device: the sync on the rows stays, and so does the
    # tower's call into the helper
    device = where(lint_package(tmp_path, {**files, "model.py": TOWER_MODEL.replace("FIELD", "pixel_values")}))
    assert lines(device, "pkg/tower.py") == [8, 12]
