"""Python numbers and non-tensor objects that issue 24's samples showed taken for device data
(docs/lint_precision.md, "Session of 2026-11-27"): the members of a tuple, loops over literal
rows, `isinstance` narrowing to a class of the program, functions annotated to return a Python
scalar, sizes of a tensor, string comparisons and tensor predicates. Each case has its
counterpart where the value is a device tensor, still reported."""

from __future__ import annotations

import textwrap

from lint_helpers import lint_source


def found(tmp_path, source: str) -> list[tuple[int, str]]:
    run = lint_source(tmp_path, textwrap.dedent(source))
    return sorted((f.site.line, f.code) for f in run.findings)


# vLLM muse_spark fused_rmsnorm.py:488: each row pairs a weight tensor with a float and a flag
LOOP_OVER_ROWS = """\
import torch

def norm(post_weight: torch.Tensor | None, pre_weight: torch.Tensor | None,
         post_gain_center: float = 0.0, pre_gain_center: float = 0.0,
         post_scale: bool = False, pre_scale: bool = False):
    for weight, gain_center, scale, name in (
        (post_weight, post_gain_center, post_scale, "post"),
        (pre_weight, pre_gain_center, pre_scale, "pre"),
    ):
        if weight is None:
            assert gain_center == 0.0
            assert not scale
        else:
            assert weight.sum() > 0
"""


def test_a_loop_over_literal_rows_binds_each_column_by_itself(tmp_path):
    # only the weight column is a tensor: its truth test is the one sync
    assert found(tmp_path, LOOP_OVER_ROWS) == [(14, "SYN206")]


def test_a_column_of_tensors_in_literal_rows_is_still_a_tensor(tmp_path):
    source = LOOP_OVER_ROWS.replace("post_gain_center: float = 0.0", "post_gain_center: torch.Tensor = None")
    assert (11, "SYN206") in found(tmp_path, source)


# vLLM deepseek_v41 model_state.py:339: a lazily built (int, device tensor) pair, unpacked
TUPLE_FIELD = """\
import torch

class State:
    def __init__(self, device):
        self.device = device
        self._replay = None

    def prepare(self, specs):
        if self._replay is None:
            self._replay = (max(s.tokens for s in specs), torch.tensor([1], device=self.device))
        window, groups = self._replay
        if window:
            return 1
        if groups.any():
            return 2
"""


def test_unpacking_a_tuple_binds_each_member_where_it_lives(tmp_path):
    assert found(tmp_path, TUPLE_FIELD) == [(14, "SYN206")]


def test_a_tuple_reassigned_on_another_path_loses_its_members(tmp_path):
    source = TUPLE_FIELD.replace("        window, groups = self._replay\n",
                                 "        else:\n            self._replay = self.other()\n"
                                 "        window, groups = self._replay\n")
    assert (14, "SYN206") in found(tmp_path, source)  # the other path's tuple may hold anything
    assert (16, "SYN206") in found(tmp_path, source)


# SGLang vision.py:238: `cu_seqlens` is a tensor or a cache object with an `empty()` method
NARROWED = """\
from typing import Any, Optional
import torch

class SingletonCache:
    data: Optional[Any] = None
    def empty(self) -> bool:
        return self.data is None

def resolve(cu_seqlens: torch.Tensor | SingletonCache | None, n: int, device):
    if cu_seqlens is None:
        return torch.arange(n, device=device)
    elif isinstance(cu_seqlens, SingletonCache):
        if cu_seqlens.empty():
            return None
    elif cu_seqlens.any():
        return cu_seqlens
"""


def test_isinstance_of_a_program_class_narrows_to_no_tensor(tmp_path):
    assert found(tmp_path, NARROWED) == [(15, "SYN206")]  # the tensor arm still syncs


def test_isinstance_of_a_tensor_subclass_does_not_narrow(tmp_path):
    source = NARROWED.replace("SingletonCache", "PackedTensor")
    assert (13, "SYN206") in found(tmp_path, source)


def test_isinstance_narrows_the_body_of_a_conditional_expression(tmp_path):
    source = """\
    import torch

    def check(grid_thws: torch.Tensor | list, m: int):
        shapes = grid_thws if isinstance(grid_thws, list) else grid_thws.tolist()
        assert all(1 <= h <= m and w > 0 for t, h, w in shapes)
        lens = grid_thws if isinstance(grid_thws, list) else grid_thws + 1
        assert all(1 <= h <= m and w > 0 for t, h, w in lens)
    """
    # the `.tolist()` on the tensor arm syncs; the tensor arm of `lens` is a tensor
    assert found(tmp_path, source) == [(4, "SYN202"), (7, "SYN206")]


def test_a_comprehension_unpacks_zip_member_by_member(tmp_path):
    source = """\
    import torch

    def act(embeddings: torch.Tensor, params, activation, ok: torch.Tensor):
        flags = [p.use_activation for p in params]
        out = [activation(v) if f else v for v, f in zip(embeddings, flags)]
        return out, [v if f else None for v, f in zip(embeddings, ok)]
    """
    assert found(tmp_path, source) == [(6, "SYN206")]


def test_a_function_annotated_to_return_a_float_gives_a_python_number(tmp_path):
    source = """\
    import torch

    def gain_center(x: torch.Tensor) -> float:
        return x.sum() * 2

    def check(g: torch.Tensor | float):
        if g == 0.0:
            return 1

    def use(x: torch.Tensor):
        return check(gain_center(x))
    """
    assert found(tmp_path, source) == []
    # annotated to return a tensor, the same call passes a device value the helper syncs on
    tensor = found(tmp_path, source.replace("-> float", "-> torch.Tensor"))
    assert (7, "SYN206") in tensor and (11, "SYN601") in tensor


SIZES = """\
import torch

class Gemm:
    def __init__(self, n, device):
        self.flags = torch.zeros(n, device=device)

    def run(self, spec, x: torch.Tensor):
        assert self.flags.numel() >= spec.tiles
        assert self.flags.size(0) == spec.ctas
        assert self.flags.sum() >= spec.tiles
        return x.to(1)
"""


def test_a_size_of_a_device_field_is_no_device_value(tmp_path):
    assert found(tmp_path, SIZES) == [(10, "SYN206")]


def test_string_comparisons_and_tensor_predicates_are_python_bools(tmp_path):
    source = """\
    import torch

    class Launch:
        def __init__(self, device):
            self.result = torch.zeros(3, device=device)

        def run(self, t: torch.Tensor):
            if self.result == "tensor":
                return 1
            if t.is_inference():
                return 2
            if t.is_nonzero():
                return 3
    """
    assert found(tmp_path, source) == [(12, "SYN206")]  # `is_nonzero` reads the value


def test_the_items_of_a_python_container_zipped_are_not_python_numbers(tmp_path):
    # SGLang cube_sparse_attn/mask.py:304: a tuple of device tensors built by `tuple(...)`
    source = """\
    import torch

    def counts(positions: torch.Tensor, cube_size):
        ranked = tuple(positions[:, axis] for axis in range(3))
        return tuple(int(axis.max().item()) // extent for axis, extent in zip(ranked, cube_size))
    """
    assert found(tmp_path, source) == [(5, "SYN201")]


def test_the_items_of_a_value_narrowed_to_a_list_are_not_python_numbers(tmp_path):
    # SGLang batch_result_processor.py:463: a list of tensors, each copied to the host
    source = """\
    import torch

    def to_host(phs: torch.Tensor | list):
        if isinstance(phs, list):
            if not phs:
                return None
            return [t.cpu() for t in phs]
        return phs.cpu()
    """
    assert found(tmp_path, source) == [(7, "SYN203"), (8, "SYN203")]
