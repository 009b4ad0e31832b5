"""PR 32951: zero-bubble asynchronous scheduling with speculative decoding.

Each step the runner needs every token's position (`num_computed_tokens` of its request plus its
offset in the query) and its KV-cache slot (through the block table). With speculative decoding,
`num_computed_tokens` after a step depends on how many drafts the verifier accepted, which only
the device knows.

Naive: at the end of every step the host reads the accepted counts (a sync: the host waits for
the whole forward pass, and the device idles while the host prepares the next step), keeps
exact counts in numpy, computes positions and slot mapping in numpy and copies them up.
Fixed: the host assumes every draft is accepted (its mirror is an upper bound, see
`seq_lens_upper_bound`), a Triton kernel corrects `num_computed_tokens` on the device from the
device-side accepted counts, and positions and slot mapping are computed on the device
(`compute_slot_mapping` in Triton). The host never reads the counts in the loop.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from reference_impl.common import PinnedStaging, ScheduledBatch, check_impl
from reference_impl.kernels import PAD_SLOT_ID, compute_slot_mapping, correct_num_computed_tokens
from reference_impl.seq_lens_upper_bound import HostSeqLenMirror


@dataclass
class StepInputs:
    positions: torch.Tensor  # [num_tokens] int64, device
    slot_mapping: torch.Tensor  # [num_tokens_padded] int64, device; PAD_SLOT_ID past num_tokens
    seq_lens: torch.Tensor  # [num_reqs] int32, device: exact
    seq_lens_cpu_upper_bound: np.ndarray  # [num_reqs] int32, host: >= seq_lens (== in naive)
    req_indices: torch.Tensor  # [num_reqs] int32, device
    query_start_loc: torch.Tensor  # [num_reqs + 1] int32, device
    num_tokens: int


def positions_numpy(num_computed: np.ndarray, batch: ScheduledBatch) -> np.ndarray:
    """Each token's position: its request's `num_computed` plus its offset in the query (int64)."""
    qsl = batch.query_start_loc
    n = int(qsl[-1])
    offsets = np.arange(n, dtype=np.int64) - np.repeat(qsl[:-1], batch.query_lens)
    return np.repeat(num_computed[batch.req_indices], batch.query_lens) + offsets


def slots_numpy(
    positions: np.ndarray,
    batch: ScheduledBatch,
    block_table_np: np.ndarray,
    block_size: int,
    num_tokens_padded: int,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """KV slot of each token through the block table (vLLM's numpy way: one flat gather),
    PAD_SLOT_ID up to `num_tokens_padded`; into `out` (int64) when given."""
    n = len(positions)
    slots = np.empty(num_tokens_padded, dtype=np.int64) if out is None else out[:num_tokens_padded]
    rows = np.repeat(batch.req_indices.astype(np.int64), batch.query_lens)
    flat = rows * block_table_np.shape[1] + positions // block_size
    np.multiply(block_table_np.reshape(-1)[flat], block_size, out=slots[:n])
    slots[:n] += positions % block_size
    slots[n:] = PAD_SLOT_ID
    return slots


def slot_mapping_numpy(
    num_computed: np.ndarray, batch: ScheduledBatch, block_table_np: np.ndarray, block_size: int, num_tokens_padded: int
) -> tuple[np.ndarray, np.ndarray]:
    """The host way: positions and slots of every token with numpy. Returns (positions, slots)."""
    positions = positions_numpy(num_computed, batch)
    return positions, slots_numpy(positions, batch, block_table_np, block_size, num_tokens_padded)


class InputPreparer:
    """Owns the per-request `num_computed_tokens` (host mirror and device truth) and the block
    table, and turns a scheduled batch into positions, slots and sequence lengths."""

    def __init__(self, max_num_reqs: int, max_blocks_per_req: int, block_size: int, device, impl: str):
        self.device = torch.device(device)
        self.impl = check_impl(impl)
        self.block_size = block_size
        self.mirror = HostSeqLenMirror(max_num_reqs)  # exact in naive, an upper bound in fixed
        self.num_computed = torch.zeros(max_num_reqs, dtype=torch.int32, device=self.device)
        self.block_table_np = np.zeros((max_num_reqs, max_blocks_per_req), dtype=np.int32)
        self.block_table = torch.zeros(max_num_reqs, max_blocks_per_req, dtype=torch.int32, device=self.device)
        # Persistent pinned buffers for every upload, allocated once (the block table's size).
        self.staging = PinnedStaging(self.device, slot_bytes=max(self.block_table_np.nbytes, 16 << 10))
        self._uploaded = None  # (batch, device arrays of prepare) for finish to reuse

    def add_request(self, row: int, block_ids: np.ndarray, num_computed: int = 0) -> None:
        """A new request in `row`: its first blocks and its cached prefix length (host data)."""
        self.block_table_np[row] = 0
        self.block_table_np[row, : len(block_ids)] = block_ids
        self.mirror.reset(row, num_computed)
        self.num_computed[row : row + 1].fill_(num_computed)  # a slice fill: no host scalar copy

    def append_blocks(self, row: int, start: int, block_ids: np.ndarray) -> None:
        self.block_table_np[row, start : start + len(block_ids)] = block_ids

    def commit_block_table(self) -> None:
        """Host edits of this step to the device: one asynchronous copy of the whole table."""
        self.staging.copy_into(self.block_table, self.block_table_np)

    def prepare(self, batch: ScheduledBatch, num_tokens_padded: int | None = None) -> StepInputs:
        n = batch.num_tokens
        padded = n if num_tokens_padded is None else num_tokens_padded
        upper = self.mirror.upper_bound(batch)
        if self.impl == "naive":
            # The mirror is exact (finish() read the counts), so the host computes everything.
            positions, slots = slot_mapping_numpy(
                self.mirror.num_computed_tokens_np, batch, self.block_table_np, self.block_size, padded
            )
            qsl, req_indices, positions, slots, seq_lens = self.staging.upload(
                batch.query_start_loc, batch.req_indices, positions, slots, upper.astype(np.int32)
            )
            return StepInputs(positions, slots, seq_lens, upper, req_indices, qsl, n)
        # Fixed: from the device's own num_computed_tokens; sizes from host data only. One upload
        # of the host arrays, which finish() reuses.
        qsl, req_indices, query_lens, num_draft = self.staging.upload(
            batch.query_start_loc, batch.req_indices, batch.query_lens, batch.num_draft
        )
        self._uploaded = (batch, req_indices, query_lens, num_draft)
        base = self.num_computed[req_indices.long()]
        seq_lens = base + query_lens
        token_base = torch.repeat_interleave(base - qsl[:-1], query_lens, output_size=n)
        positions = token_base.long() + torch.arange(n, device=self.device)
        slots = compute_slot_mapping(positions, qsl, req_indices, self.block_table, self.block_size, padded)
        return StepInputs(positions, slots, seq_lens, upper, req_indices, qsl, n)

    def finish(self, batch: ScheduledBatch, num_accepted: torch.Tensor) -> None:
        """After verification. `num_accepted`: [num_reqs] int32 on the device, accepted drafts per
        request (0 for requests without drafts)."""
        if self.impl == "naive":
            accepted = np.asarray(num_accepted.tolist(), dtype=np.int32)  # sync: tolist
            self.mirror.advance(batch)
            self.mirror.correct(batch.req_indices, batch.num_draft - accepted)
            return
        self.mirror.advance(batch)  # optimistic: every draft accepted
        if self._uploaded is not None and self._uploaded[0] is batch:
            _, req_indices, query_lens, num_draft = self._uploaded
        else:
            req_indices, query_lens, num_draft = self.staging.upload(batch.req_indices, batch.query_lens, batch.num_draft)
        self._uploaded = None
        correct_num_computed_tokens(self.num_computed, req_indices, query_lens, num_draft, num_accepted)
