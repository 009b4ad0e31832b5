"""What every builder shares: the scheduler's host-side batch and the sync-free host->device copy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

Impl = Literal["naive", "fixed"]
IMPLS: tuple[str, ...] = ("naive", "fixed")


def check_impl(impl: str) -> str:
    if impl not in IMPLS:
        raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
    return impl


def to_device(array: np.ndarray | torch.Tensor, device: torch.device | str) -> torch.Tensor:
    """Host data to `device` without making the host wait: stage in pinned memory, copy with
    non_blocking=True. A fresh pinned tensor per copy is safe to drop at once: PyTorch's host
    allocator does not hand the block out again until the copy that reads it has run. (A copy
    from pageable memory would block even with non_blocking=True.)"""
    host = torch.from_numpy(np.ascontiguousarray(array)) if isinstance(array, np.ndarray) else array
    if torch.device(device).type == "cpu":
        return host.clone()  # same semantics as a copy: the caller may reuse its array
    return host.pin_memory().to(device, non_blocking=True)


def ceil_div(a, b):
    return (a + b - 1) // b


@dataclass(frozen=True)
class ScheduledBatch:
    """What the scheduler hands the model runner for one step; host data only (numpy int32).

    Requests are ordered decodes first (plain decodes and spec decodes, whose query is the last
    sampled token plus `num_draft` draft tokens), then prefills, as the engines reorder them.
    `req_indices` are the requests' rows in the runner's persistent per-request tables."""

    req_indices: np.ndarray
    query_lens: np.ndarray
    num_draft: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.req_indices)
        assert len(self.query_lens) == n and len(self.num_draft) == n
        assert (self.query_lens >= 1).all() and (self.num_draft >= 0).all()
        assert (self.query_lens >= self.num_draft + 1).all()
        prefill = self.is_prefill
        assert not (prefill[:-1] & ~prefill[1:]).any(), "decodes must come before prefills"

    @property
    def is_prefill(self) -> np.ndarray:
        # A decode's query is 1 token (+ drafts); anything longer, without drafts, is a prefill.
        return (self.num_draft == 0) & (self.query_lens > 1)

    @property
    def num_reqs(self) -> int:
        return len(self.req_indices)

    @property
    def num_prefills(self) -> int:
        return int(self.is_prefill.sum())

    @property
    def num_decodes(self) -> int:
        return self.num_reqs - self.num_prefills

    @property
    def num_tokens(self) -> int:
        return int(self.query_lens.sum())

    @property
    def query_start_loc(self) -> np.ndarray:
        qsl = np.zeros(self.num_reqs + 1, dtype=np.int32)
        np.cumsum(self.query_lens, out=qsl[1:])
        return qsl
