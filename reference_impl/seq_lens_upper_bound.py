"""PR 40654: `seq_lens_cpu_upper_bound` instead of a lazy `seq_lens_cpu` that syncs.

The true sequence lengths live on the device: with asynchronous speculative decoding only the
device knows how many draft tokens were accepted. The naive metadata offers `seq_lens_cpu`, a lazy
property that copies them to the host: every first read is a sync that the call site cannot
see. The fix keeps a host mirror, `num_computed_tokens_np`, advanced optimistically by the
scheduled tokens after each step and lowered by the rejected drafts once the host knows that
count. `mirror + num_scheduled_tokens` is then an upper bound of every sequence length, never
below the truth, so buffers sized from it are always large enough, and exact when no rejection
is pending.

The consumer here is an MLA-style chunked-context builder: a prefill's cached context
(`seq_len - query_len` tokens) is processed in chunks that fit a fixed workspace.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from reference_impl.common import PinnedStaging, ScheduledBatch, check_impl, to_device


@dataclass
class CommonAttentionMetadata:
    """What every attention backend's builder receives. Device tensors, with host copies of what
    the host computed itself (`*_cpu`)."""

    query_start_loc: torch.Tensor  # [num_reqs + 1] int32, device
    query_start_loc_cpu: torch.Tensor  # the same, host
    seq_lens: torch.Tensor  # [num_reqs] int32, device: the truth
    seq_lens_cpu_upper_bound: torch.Tensor  # [num_reqs] int32, host: >= seq_lens
    num_draft_tokens: torch.Tensor  # [num_reqs] int32, device
    num_draft_tokens_cpu: torch.Tensor  # host
    block_table: torch.Tensor  # [num_reqs, max_blocks] int32, device (GDN: state slots)
    num_reqs: int
    num_decodes: int
    num_prefills: int
    num_actual_tokens: int
    max_query_len: int
    max_seq_len: int  # from the upper bound
    _seq_lens_cpu: torch.Tensor | None = field(default=None, repr=False)

    @property
    def seq_lens_cpu(self) -> torch.Tensor:
        """The naive accessor: looks like a field, copies from the device on first use."""
        if self._seq_lens_cpu is None:
            self._seq_lens_cpu = self.seq_lens.cpu()  # sync: cpu_copy
        return self._seq_lens_cpu


def make_common_metadata(
    batch: ScheduledBatch,
    seq_lens: torch.Tensor,
    seq_lens_cpu_upper_bound: np.ndarray,
    block_table: torch.Tensor,
    device: torch.device | str,
    staging: PinnedStaging | None = None,
) -> CommonAttentionMetadata:
    """Assemble the shared metadata from host scheduler data and the device's true seq_lens.
    A runner calling this every step passes its `staging` (persistent pinned buffers); without
    one, the two small uploads are one-offs through fresh pinned memory (tests, set-up)."""
    qsl = batch.query_start_loc
    upper = torch.from_numpy(np.ascontiguousarray(seq_lens_cpu_upper_bound, dtype=np.int32))
    if staging is None:
        qsl_dev, num_draft_dev = to_device(qsl, device), to_device(batch.num_draft, device)
    else:
        qsl_dev, num_draft_dev = staging.upload(qsl, batch.num_draft)
    return CommonAttentionMetadata(
        query_start_loc=qsl_dev,
        query_start_loc_cpu=torch.from_numpy(qsl),
        seq_lens=seq_lens,
        seq_lens_cpu_upper_bound=upper,
        num_draft_tokens=num_draft_dev,
        num_draft_tokens_cpu=torch.from_numpy(batch.num_draft),
        block_table=block_table,
        num_reqs=batch.num_reqs,
        num_decodes=batch.num_decodes,
        num_prefills=batch.num_prefills,
        num_actual_tokens=batch.num_tokens,
        max_query_len=int(batch.query_lens.max()) if batch.num_reqs else 0,
        max_seq_len=int(upper.max()) if batch.num_reqs else 0,
    )


class HostSeqLenMirror:
    """The host's view of `num_computed_tokens`, one entry per request row. Pure numpy."""

    def __init__(self, max_num_reqs: int):
        self.num_computed_tokens_np = np.zeros(max_num_reqs, dtype=np.int32)

    def reset(self, row: int, num_computed: int = 0) -> None:
        self.num_computed_tokens_np[row] = num_computed

    def upper_bound(self, batch: ScheduledBatch) -> np.ndarray:
        """seq_lens_cpu_upper_bound = num_computed_tokens_np + num_scheduled_tokens."""
        return self.num_computed_tokens_np[batch.req_indices] + batch.query_lens

    def advance(self, batch: ScheduledBatch) -> None:
        """After a step: assume every scheduled token (every draft) was accepted."""
        self.num_computed_tokens_np[batch.req_indices] += batch.query_lens

    def correct(self, req_indices: np.ndarray, num_rejected: np.ndarray) -> None:
        """Once the host knows how many drafts a step rejected (never before): tighten the bound."""
        self.num_computed_tokens_np[req_indices] -= num_rejected.astype(np.int32)


@dataclass
class ChunkedContextMetadata:
    max_seq_len: int
    context_lens: torch.Tensor  # [num_prefills] int32, device
    chunk_starts: torch.Tensor  # [num_chunks, num_prefills] int32, device
    cu_chunk_seq_lens: torch.Tensor  # [num_chunks, num_prefills + 1] int32, device
    num_chunks: int
    workspace_tokens: int  # tokens the largest chunk needs


class ChunkedContextBuilder:
    """Splits the cached context of the prefills into chunks of at most `chunk_tokens` per
    request. Everything is sized on the host, so it needs host sequence lengths."""

    def __init__(self, chunk_tokens: int, device: torch.device | str, impl: str):
        self.chunk_tokens = chunk_tokens
        self.device = torch.device(device)
        self.impl = check_impl(impl)
        self.staging = PinnedStaging(self.device)  # persistent pinned buffers, allocated once

    def build(self, common: CommonAttentionMetadata) -> ChunkedContextMetadata:
        # The line that differs: the naive builder reads the syncing property, the fixed one the
        # host upper bound (exact whenever no rejection is pending, larger otherwise).
        seq_lens_cpu = common.seq_lens_cpu if self.impl == "naive" else common.seq_lens_cpu_upper_bound
        first = common.num_decodes
        qsl = common.query_start_loc_cpu.numpy()
        query_lens = np.diff(qsl)[first:]
        seq_lens = seq_lens_cpu.numpy()[first:]
        context_lens = (seq_lens - query_lens).astype(np.int32)
        max_context = int(context_lens.max()) if len(context_lens) else 0
        num_chunks = -(-max_context // self.chunk_tokens)
        starts = (np.arange(num_chunks, dtype=np.int32) * self.chunk_tokens)[:, None]
        ends = np.minimum(context_lens[None, :], starts + self.chunk_tokens)
        chunk_lens = np.maximum(ends - starts, 0)
        cu = np.zeros((num_chunks, len(context_lens) + 1), dtype=np.int32)
        np.cumsum(chunk_lens, axis=1, out=cu[:, 1:])
        chunk_starts = np.tile(starts, (1, len(context_lens))).astype(np.int32)
        context_lens_dev, chunk_starts_dev, cu_dev = self.staging.upload(context_lens, chunk_starts, cu)
        return ChunkedContextMetadata(
            max_seq_len=int(seq_lens_cpu.max()) if common.num_reqs else 0,
            context_lens=context_lens_dev,
            chunk_starts=chunk_starts_dev,
            cu_chunk_seq_lens=cu_dev,
            num_chunks=num_chunks,
            workspace_tokens=int(cu[:, -1].max()) if num_chunks else 0,
        )
