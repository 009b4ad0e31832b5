"""PR 38361: GDN prefill chunk indices from host data.

Chunked linear-attention kernels cut every variable-length prefill into chunks of
`GDN_CHUNK_SIZE` tokens and run one program per (sequence, chunk) pair. `chunk_indices` lists
those pairs; `chunk_offsets` holds the number of chunks before each sequence. Both follow from
the sequence lengths, which the host already has.

Naive: the kernel wrapper derives them from the device `cu_seqlens` with `.tolist()` (a blocking
device->host read) and uploads them from pageable memory (a blocking copy), caching the result
per tensor, so the first layer of every step pays the sync. Fixed: the metadata builder computes
them from `cu_seqlens_cpu`, copies them with `non_blocking=True` from its persistent pinned
staging buffers (`PinnedStaging`), and the
wrapper takes them as optional arguments, skipping the cached look-up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from reference_impl.common import PinnedStaging, ceil_div, check_impl
from reference_impl.kernels import chunk_local_cumsum
from reference_impl.seq_lens_upper_bound import CommonAttentionMetadata

GDN_CHUNK_SIZE = 64  # tokens per chunk of the chunked GDN kernels (was a magic 64 in several files)


def prepare_chunk_indices(cu_seqlens: np.ndarray, chunk_size: int = GDN_CHUNK_SIZE) -> np.ndarray:
    """[num_chunks, 2] int32: (sequence i, chunk j of sequence i), in order."""
    counts = ceil_div(np.diff(cu_seqlens), chunk_size)
    offsets = prepare_chunk_offsets(cu_seqlens, chunk_size)
    seq = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
    chunk = np.arange(offsets[-1], dtype=np.int32) - np.repeat(offsets[:-1], counts)
    return np.stack([seq, chunk], axis=1).astype(np.int32).reshape(-1, 2)


def prepare_chunk_offsets(cu_seqlens: np.ndarray, chunk_size: int = GDN_CHUNK_SIZE) -> np.ndarray:
    """[num_seqs + 1] int32: chunks before each sequence."""
    counts = ceil_div(np.diff(np.asarray(cu_seqlens, dtype=np.int64)), chunk_size)
    offsets = np.zeros(len(counts) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    return offsets


# The original's per-tensor cache: the last few (tensor, chunk size) pairs, compared by identity,
# so the layers after the first reuse the result of the first layer's sync.
_CACHE: list[tuple[torch.Tensor, int, tuple[torch.Tensor, torch.Tensor]]] = []
_CACHE_SIZE = 8


def cached_chunk_metadata(cu_seqlens: torch.Tensor, chunk_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    for tensor, size, value in _CACHE:
        if tensor is cu_seqlens and size == chunk_size:
            return value
    bounds = np.asarray(cu_seqlens.tolist(), dtype=np.int64)  # sync: tolist
    indices = torch.from_numpy(prepare_chunk_indices(bounds, chunk_size)).to(cu_seqlens.device)  # sync: h2d_copy
    offsets = torch.from_numpy(prepare_chunk_offsets(bounds, chunk_size)).to(cu_seqlens.device)  # sync: h2d_copy
    _CACHE.append((cu_seqlens, chunk_size, (indices, offsets)))
    del _CACHE[:-_CACHE_SIZE]
    return indices, offsets


def gdn_chunk_prefill(
    g: torch.Tensor,
    cu_seqlens: torch.Tensor,
    *,
    chunk_size: int = GDN_CHUNK_SIZE,
    chunk_indices: torch.Tensor | None = None,
    chunk_offsets: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernel wrapper. g: [num_tokens, num_heads] log-decays of the prefill tokens.
    Returns the chunk-local cumulative decay (what the chunked kernels apply inside a chunk) and
    each sequence's total decay [num_seqs, num_heads] (what carries the state across chunks)."""
    if chunk_indices is None or chunk_offsets is None:  # the naive caller passes nothing
        chunk_indices, chunk_offsets = cached_chunk_metadata(cu_seqlens, chunk_size)
    g_cum = chunk_local_cumsum(g, cu_seqlens, chunk_indices, chunk_size)
    # The last row of each chunk holds the chunk's total; sum them per sequence through
    # chunk_offsets. Device gathers with device indices: no host read.
    seq, chunk = chunk_indices[:, 0].long(), chunk_indices[:, 1].long()
    bos, eos = cu_seqlens[seq].long(), cu_seqlens[seq + 1].long()
    last = torch.minimum(bos + (chunk + 1) * chunk_size, eos) - 1
    totals = torch.zeros(chunk_indices.shape[0] + 1, g.shape[1], dtype=torch.float32, device=g.device)
    torch.cumsum(g_cum[last].float(), 0, out=totals[1:])
    seq_decay = totals[chunk_offsets[1:].long()] - totals[chunk_offsets[:-1].long()]
    return g_cum, seq_decay


@dataclass
class GDNPrefillMetadata:
    num_prefills: int
    cu_seqlens: torch.Tensor  # [num_prefills + 1] int32, device
    cu_seqlens_cpu: torch.Tensor  # host
    chunk_indices: torch.Tensor | None  # None: the wrapper derives them (naive)
    chunk_offsets: torch.Tensor | None


class GDNPrefillMetadataBuilder:
    def __init__(self, device: torch.device | str, impl: str, chunk_size: int = GDN_CHUNK_SIZE):
        self.device = torch.device(device)
        self.impl = check_impl(impl)
        self.chunk_size = chunk_size
        self.staging = PinnedStaging(self.device)  # persistent pinned buffers, allocated once

    def build(self, common: CommonAttentionMetadata) -> GDNPrefillMetadata:
        first = common.num_decodes  # prefills follow the decodes
        cu_cpu = common.query_start_loc_cpu[first:] - common.query_start_loc_cpu[first]
        cu = common.query_start_loc[first:] - common.query_start_loc[first:first + 1]
        chunk_indices = chunk_offsets = None
        if self.impl == "fixed" and common.num_prefills > 0:
            bounds = cu_cpu.numpy()
            chunk_indices, chunk_offsets = self.staging.upload(
                prepare_chunk_indices(bounds, self.chunk_size), prepare_chunk_offsets(bounds, self.chunk_size)
            )
        return GDNPrefillMetadata(common.num_prefills, cu, cu_cpu, chunk_indices, chunk_offsets)
