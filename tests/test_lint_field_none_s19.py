"""A declared field that nothing run while serving leaves None (field_none.py): its None
fallback never runs. SGLang's LoRA kernels read `batch_info.seg_lens.max().item()` only when
`batch_info.max_len` is None; every backend gives it a number per batch, and only the CUDA-graph
buffers built at start-up pass `max_len=None  # Set per batch`."""

from __future__ import annotations

import tempfile
from pathlib import Path

from test_lint_scope import lint_package, where

INFO = """
    from dataclasses import dataclass, field
    from typing import Optional
    import torch

    @dataclass
    class BatchInfo:
        bs: int
        seg_lens: torch.Tensor
        max_len: DECLARED

    def max_segment_len(batch_info: BatchInfo) -> int:
        if batch_info.max_len is not None:
            return batch_info.max_len
        return int(batch_info.seg_lens.max().item())

    def padded_len(batch_info: BatchInfo) -> int:
        if batch_info.max_len is None:
            return int(batch_info.seg_lens.sum().item())
        else:
            return batch_info.max_len + 1
"""

BACKEND = """
    import torch
    from pkg.info import BatchInfo, max_segment_len, padded_len

    class Backend:
        def init_cuda_graph_batch_info(self, n: int):
            self.graph_info = BatchInfo(bs=n, seg_lens=torch.zeros(n, dtype=torch.int32), max_len=None)

        def prepare_lora_batch(self, seg_lens: torch.Tensor, lens_cpu: list, chunk_size: int):
            self.graph_info.max_len = chunk_size
            return BatchInfo(bs=len(lens_cpu), seg_lens=seg_lens, max_len=GIVEN)

        def forward(self, x: torch.Tensor, info: BatchInfo):
            return x[: max_segment_len(info)] + padded_len(info)
"""

FALLBACKS = [("pkg/info.py", 15, "SYN201"), ("pkg/info.py", 19, "SYN201")]


def _run(tmp_path, declared="Optional[int]", given="max(lens_cpu)", backend=BACKEND, extra=None):
    files = {"info.py": INFO.replace("DECLARED", declared), "backend.py": backend.replace("GIVEN", given)}
    fresh = Path(tempfile.mkdtemp(dir=tmp_path))  # each run its own package: no file left from another
    return lint_package(fresh, {**files, **(extra or {})})


def test_a_field_every_step_gives_a_value_has_a_dead_fallback(tmp_path):
    # VALID: a number, arithmetic, a typed parameter, a field read of a field never None
    for given in ("max(lens_cpu)", "chunk_size * 2", "chunk_size", "len(lens_cpu) if lens_cpu else 0",
                  "self.graph_info.max_len"):
        assert where(_run(tmp_path, given=given)) == [], given
    assert where(_run(tmp_path, declared="Optional[int] = field(default_factory=int)")) == []


def test_a_step_that_may_give_none_keeps_the_fallback(tmp_path):
    # INVALID: a value that may be None, given outside start-up code
    for given in ("None", "self.lookup(seg_lens)", "lens_cpu[0]", "self.cached and max(lens_cpu)"):
        run = _run(tmp_path, given=given)
        assert set(FALLBACKS) <= set(where(run)), given


def test_a_none_default_or_a_none_store_while_serving_keeps_the_fallback(tmp_path):
    # INVALID: a construction that leaves it out gets None
    assert set(FALLBACKS) <= set(where(_run(tmp_path, declared="Optional[int] = None")))
    assert set(FALLBACKS) <= set(where(_run(tmp_path, declared="Optional[int] = field(default=None)")))
    # INVALID: a store of None in a method that may run every step (a reset is no start-up)
    for method in ("def end_batch(self):", "def reset_batch(self):", "def __init__(self):"):
        backend = BACKEND + f"""
        {method}
            self.graph_info.max_len = None
        """
        assert set(FALLBACKS) <= set(where(_run(tmp_path, backend=backend))), method


def test_a_positional_none_or_another_class_of_the_name_keeps_the_fallback(tmp_path):
    # INVALID: passed by position, the field cannot be told: a None there may be it
    backend = BACKEND.replace("max_len=GIVEN)", "GIVEN)").replace("bs=len(lens_cpu), seg_lens=seg_lens, ",
                                                                  "len(lens_cpu), seg_lens, ")
    assert set(FALLBACKS) <= set(where(_run(tmp_path, given="None", backend=backend)))
    # INVALID: another class declaring the name with a None default
    other = """
        from dataclasses import dataclass
        from typing import Optional

        @dataclass
        class Other:
            max_len: Optional[int] = None
    """
    assert set(FALLBACKS) <= set(where(_run(tmp_path, extra={"other.py": other})))


def test_a_field_given_a_read_of_a_maybe_none_field_keeps_the_fallback(tmp_path):
    # VALID: a read of another declared field nothing leaves None
    lens = """
        from dataclasses import dataclass

        @dataclass
        class Lens:
            other_len: int
    """
    assert where(_run(tmp_path, given="self.lens.other_len", extra={"lens.py": lens})) == []
    # INVALID: the same read, once a step may store None into that field
    backend = BACKEND + """
        def end_batch(self, lens):
            lens.other_len = None
    """
    run = _run(tmp_path, given="self.lens.other_len", backend=backend, extra={"lens.py": lens})
    assert set(FALLBACKS) <= set(where(run))
    # INVALID: a read of a field no class of the tree declares (another library's object)
    assert set(FALLBACKS) <= set(where(_run(tmp_path, given="self.config.other_len")))
