"""What every builder shares: the scheduler's host-side batch and the sync-free host->device copies
(`PinnedStaging` per step, `to_device` for one-offs)."""

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
    """A one-off upload (set-up, tests): a fresh pinned tensor, copied with non_blocking=True.

    Not for per-step paths: every call allocates pinned memory through the CUDA caching host
    allocator, which cannot hand out a block again until the copy reading it has run, so behind a
    queue of GPU work it keeps allocating new pinned memory (slow host calls). Per-step uploads
    go through a `PinnedStaging` owned by the builder. (A copy from pageable memory would block
    even with non_blocking=True.)"""
    host = torch.from_numpy(np.ascontiguousarray(array)) if isinstance(array, np.ndarray) else array
    if torch.device(device).type == "cpu":
        return host.clone()  # same semantics as a copy: the caller may reuse its array
    return host.pin_memory().to(device, non_blocking=True)


_ALIGN = 64  # byte offset of every array packed into a staging slot (any dtype's view is aligned)


class _Slot:
    """One pinned host buffer and the CUDA event recorded right after the copy that reads it."""

    __slots__ = ("host", "host_np", "event", "in_use")

    def __init__(self, nbytes: int):
        self.host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
        self.host_np = self.host.numpy()
        self.event = torch.cuda.Event()
        self.in_use = False  # an event was recorded: the slot is free again once it has completed

    @property
    def nbytes(self) -> int:
        return self.host_np.nbytes

    def is_free(self) -> bool:
        # Event.query() asks the driver whether the copy has run; it never waits.
        return not self.in_use or self.event.query()


class PinnedStaging:
    """Persistent pinned staging for host->device uploads, allocated once per builder (vLLM's
    CpuGpuBuffer idea): host data is written into a pinned buffer and copied up with
    `non_blocking=True`, so neither a pageable copy nor a per-call pinned allocation is on the
    host's path.

    The hazard of reusing a pinned buffer: the copy out of it runs later, on the stream, so the
    host must not overwrite it until that copy has run. Here a ring of slots (a pinned buffer
    each, four to start: double buffering with room for the host to run a step ahead) each has a
    CUDA event recorded right after its copy; an upload takes the next slot whose event has
    completed (`Event.query()`, which never blocks), never a slot whose copy may still be in
    flight, and never waits (a blocking `Event.synchronize()` would be a sync in the fixed
    path; plain double buffering without events would be wrong once the host runs more than a
    step ahead, which is what the fixed path lets it do). If every slot is still in
    flight (the GPU is further behind than the ring is deep), a slot is added; if the data do not
    fit a free slot, that slot is enlarged (to at least twice its size). Both are one-off pinned
    allocations: the ring settles at the deepest run-ahead seen and the largest upload
    (`growths` counts them). The run-ahead itself is bounded: the host blocks in a launch once the
    CUDA launch queue is full.

    `upload(*arrays)` packs all its arrays into one slot (64-byte aligned), copies them with one
    `copy_` into one fresh device buffer (the caching allocator's, so results never alias a
    previous call's) and returns a view per array. On `device="cpu"` it returns host copies.
    """

    def __init__(self, device: torch.device | str, slot_bytes: int = 16 << 10, num_slots: int = 4):
        self.device = torch.device(device)
        self.on_host = self.device.type == "cpu"
        self.growths = 0
        self._slots: list[_Slot] = [] if self.on_host else [_Slot(slot_bytes) for _ in range(num_slots)]
        self._next = 0

    @property
    def num_slots(self) -> int:
        return len(self._slots)

    @property
    def slot_bytes(self) -> list[int]:
        return [slot.nbytes for slot in self._slots]

    def _take(self, nbytes: int) -> _Slot:
        """A slot whose last copy has run and that holds `nbytes`; never waits."""
        slots, n = self._slots, len(self._slots)
        free = None
        for i in range(n):  # round robin from the slot after the last one used
            j = (self._next + i) % n
            if slots[j].is_free():
                if slots[j].nbytes >= nbytes:
                    free = j
                    break
                if free is None:
                    free = j  # free but small: enlarge it if no free slot is large enough
        if free is None:  # every slot's copy may still be in flight: one more slot (one-off)
            free = n
            slots.append(_Slot(max(nbytes, slots[-1].nbytes if slots else 0)))
            self.growths += 1
        elif slots[free].nbytes < nbytes:  # its last copy has run, so its buffer may go (one-off)
            slots[free] = _Slot(max(nbytes, 2 * slots[free].nbytes))
            self.growths += 1
        self._next = (free + 1) % len(slots)
        return slots[free]

    def upload(self, *arrays: np.ndarray) -> tuple[torch.Tensor, ...]:
        """Device copies of host arrays (numpy, or CPU tensors), one view each of one new device
        buffer; the copy is queued, the host does not wait."""
        srcs = [a.numpy() if isinstance(a, torch.Tensor) else np.ascontiguousarray(a) for a in arrays]
        if self.on_host:
            return tuple(torch.from_numpy(s.copy()) for s in srcs)
        offsets, total = [], 0
        for s in srcs:
            offsets.append(total)
            total += -(-s.nbytes // _ALIGN) * _ALIGN
        slot = self._take(max(total, _ALIGN))
        for s, off in zip(srcs, offsets):
            slot.host_np[off : off + s.nbytes].view(s.dtype).reshape(s.shape)[...] = s
        dev = torch.empty(total, dtype=torch.uint8, device=self.device)
        dev.copy_(slot.host[:total], non_blocking=True)
        slot.event.record()
        slot.in_use = True
        return tuple(
            dev[off : off + s.nbytes].view(_TORCH_DTYPES[s.dtype]).view(s.shape) for s, off in zip(srcs, offsets)
        )

    def copy_into(self, dst: torch.Tensor, array: np.ndarray) -> torch.Tensor:
        """`dst.copy_(array)` for a persistent device tensor `dst`, staged the same way."""
        src = np.ascontiguousarray(array)
        if self.on_host:
            return dst.copy_(torch.from_numpy(src), non_blocking=True)  # host to host: a plain copy
        slot = self._take(max(src.nbytes, _ALIGN))
        slot.host_np[: src.nbytes].view(src.dtype).reshape(src.shape)[...] = src
        dst.copy_(slot.host[: src.nbytes].view(_TORCH_DTYPES[src.dtype]).view(src.shape), non_blocking=True)
        slot.event.record()
        slot.in_use = True
        return dst


_TORCH_DTYPES = {
    np.dtype(np.int32): torch.int32,
    np.dtype(np.int64): torch.int64,
    np.dtype(np.float32): torch.float32,
    np.dtype(np.bool_): torch.bool,
    np.dtype(np.int8): torch.int8,
    np.dtype(np.uint8): torch.uint8,
    np.dtype(np.float64): torch.float64,
}


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
