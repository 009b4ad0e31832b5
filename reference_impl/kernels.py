"""Triton kernels of the reference implementation, each next to a plain-torch reference.

- `chunk_local_cumsum`: the consumer of `chunk_indices` (PR 38361): a cumulative sum restarted at
  every chunk of every variable-length sequence.
- `compute_slot_mapping`: token positions + block table -> KV-cache slot ids, padded (PR 32951).
- `correct_num_computed_tokens`: the device-side correction of the optimistic schedule: each
  request advances by its scheduled tokens minus the drafts the verifier rejected (PR 32951).

The wrappers never read device data on the host: grid sizes come from tensor shapes and host ints.
On a machine without a GPU, Triton runs these with `TRITON_INTERPRET=1` on CPU tensors.
`tl.arange` needs power-of-two sizes, and the interpreter does not catch out-of-bounds loads, so
every load below is masked.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

PAD_SLOT_ID = -1  # slot id of padding tokens: the KV write skips them


# --------------------------------------------------------------------------------------------
# chunk-local cumsum over variable-length sequences
# --------------------------------------------------------------------------------------------
@triton.jit
def _chunk_local_cumsum_kernel(
    g_ptr,
    out_ptr,
    cu_seqlens_ptr,
    chunk_indices_ptr,
    num_heads,
    CHUNK: tl.constexpr,
    BLOCK_H: tl.constexpr,
):
    # One program per (sequence, chunk) pair listed in chunk_indices.
    i = tl.program_id(0)
    seq = tl.load(chunk_indices_ptr + 2 * i).to(tl.int64)
    chunk = tl.load(chunk_indices_ptr + 2 * i + 1).to(tl.int64)
    bos = tl.load(cu_seqlens_ptr + seq).to(tl.int64)
    eos = tl.load(cu_seqlens_ptr + seq + 1).to(tl.int64)
    rows = bos + chunk * CHUNK + tl.arange(0, CHUNK)
    cols = tl.arange(0, BLOCK_H)
    mask = (rows[:, None] < eos) & (cols[None, :] < num_heads)
    offsets = rows[:, None] * num_heads + cols[None, :]
    x = tl.load(g_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    y = tl.cumsum(x, axis=0)
    tl.store(out_ptr + offsets, y.to(out_ptr.dtype.element_ty), mask=mask)


def chunk_local_cumsum(g: torch.Tensor, cu_seqlens: torch.Tensor, chunk_indices: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """g: [num_tokens, num_heads] float; cu_seqlens: [num_seqs + 1]; chunk_indices: [num_chunks, 2]."""
    assert g.dim() == 2 and g.is_contiguous(), "g must be a contiguous [tokens, heads] tensor"
    assert chunk_size & (chunk_size - 1) == 0, "the chunk size must be a power of two (tl.arange)"
    out = torch.empty_like(g)
    num_chunks = chunk_indices.shape[0]  # a shape: known on the host, no sync
    if num_chunks == 0 or g.numel() == 0:
        return out
    _chunk_local_cumsum_kernel[(num_chunks,)](
        g,
        out,
        cu_seqlens,
        chunk_indices.contiguous(),
        g.shape[1],
        chunk_size,  # CHUNK
        max(2, triton.next_power_of_2(g.shape[1])),  # BLOCK_H: masked; >= 2 keeps the tile 2-D everywhere
    )
    return out


def chunk_local_cumsum_reference(g: torch.Tensor, cu_seqlens: torch.Tensor, chunk_size: int) -> torch.Tensor:
    """Plain torch, one loop per chunk: for tests only."""
    out = torch.empty_like(g)
    bounds = cu_seqlens.tolist()
    for bos, eos in zip(bounds[:-1], bounds[1:]):
        for start in range(bos, eos, chunk_size):
            end = min(start + chunk_size, eos)
            out[start:end] = torch.cumsum(g[start:end].float(), dim=0).to(g.dtype)
    return out


# --------------------------------------------------------------------------------------------
# slot mapping: (request, position) -> KV-cache slot through the block table
# --------------------------------------------------------------------------------------------
@triton.jit(do_not_specialize=["num_reqs", "num_tokens_padded"])  # they change every step: no recompiles
def _compute_slot_mapping_kernel(
    positions_ptr,
    query_start_loc_ptr,
    req_indices_ptr,
    block_table_ptr,
    block_table_stride,
    slot_mapping_ptr,
    num_reqs,
    num_tokens_padded,
    block_size,
    PAD: tl.constexpr,
    BLOCK: tl.constexpr,
):
    # Programs 0..num_reqs-1 map the tokens of one request each; program num_reqs pads the tail.
    pid = tl.program_id(0)
    if pid == num_reqs:
        start = tl.load(query_start_loc_ptr + num_reqs)
        for i in range(start, num_tokens_padded, BLOCK):
            offs = i + tl.arange(0, BLOCK)
            tl.store(slot_mapping_ptr + offs, tl.full((BLOCK,), PAD, tl.int64), mask=offs < num_tokens_padded)
    else:
        row = tl.load(req_indices_ptr + pid).to(tl.int64)
        start = tl.load(query_start_loc_ptr + pid)
        end = tl.load(query_start_loc_ptr + pid + 1)
        for i in range(start, end, BLOCK):
            offs = i + tl.arange(0, BLOCK)
            mask = offs < end
            pos = tl.load(positions_ptr + offs, mask=mask, other=0).to(tl.int64)
            block = tl.load(block_table_ptr + row * block_table_stride + pos // block_size, mask=mask, other=0)
            slot = block.to(tl.int64) * block_size + pos % block_size
            tl.store(slot_mapping_ptr + offs, slot, mask=mask)


def compute_slot_mapping(
    positions: torch.Tensor,
    query_start_loc: torch.Tensor,
    req_indices: torch.Tensor,
    block_table: torch.Tensor,
    block_size: int,
    num_tokens_padded: int,
) -> torch.Tensor:
    """positions: [>= num_tokens]; query_start_loc: [num_reqs + 1]; req_indices: [num_reqs], the
    block-table row of each request; block_table: [max_reqs, max_blocks]. Returns int64 slot ids,
    PAD_SLOT_ID from the last real token up to num_tokens_padded."""
    assert block_table.stride(1) == 1
    slot_mapping = torch.empty(num_tokens_padded, dtype=torch.int64, device=positions.device)
    num_reqs = req_indices.shape[0]
    _compute_slot_mapping_kernel[(num_reqs + 1,)](
        positions,
        query_start_loc,
        req_indices,
        block_table,
        block_table.stride(0),
        slot_mapping,
        num_reqs,
        num_tokens_padded,
        block_size,
        PAD_SLOT_ID,  # PAD
        128,  # BLOCK
    )
    return slot_mapping


def compute_slot_mapping_reference(
    positions: torch.Tensor,
    query_start_loc: torch.Tensor,
    req_indices: torch.Tensor,
    block_table: torch.Tensor,
    block_size: int,
    num_tokens_padded: int,
) -> torch.Tensor:
    query_lens = (query_start_loc[1:] - query_start_loc[:-1]).long()
    num_tokens = int(query_lens.sum())
    rows = torch.repeat_interleave(req_indices.long(), query_lens)
    pos = positions[:num_tokens].long()
    blocks = block_table.long()[rows, pos // block_size]
    out = torch.full((num_tokens_padded,), PAD_SLOT_ID, dtype=torch.int64, device=positions.device)
    out[:num_tokens] = blocks * block_size + pos % block_size
    return out


# --------------------------------------------------------------------------------------------
# num_computed_tokens corrected on the device from the verifier's accepted counts
# --------------------------------------------------------------------------------------------
@triton.jit(do_not_specialize=["num_reqs"])
def _correct_num_computed_tokens_kernel(
    num_computed_ptr,
    req_indices_ptr,
    num_scheduled_ptr,
    num_draft_ptr,
    num_accepted_ptr,
    num_reqs,
    BLOCK: tl.constexpr,
):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < num_reqs
    row = tl.load(req_indices_ptr + offs, mask=mask, other=0).to(tl.int64)
    scheduled = tl.load(num_scheduled_ptr + offs, mask=mask, other=0)
    drafts = tl.load(num_draft_ptr + offs, mask=mask, other=0)
    accepted = tl.load(num_accepted_ptr + offs, mask=mask, other=0)
    current = tl.load(num_computed_ptr + row, mask=mask, other=0)
    # Rows are distinct within a batch, so no two lanes write the same element.
    new = current + scheduled - (drafts - accepted)
    tl.store(num_computed_ptr + row, new.to(num_computed_ptr.dtype.element_ty), mask=mask)


def correct_num_computed_tokens(
    num_computed: torch.Tensor,
    req_indices: torch.Tensor,
    num_scheduled: torch.Tensor,
    num_draft: torch.Tensor,
    num_accepted: torch.Tensor,
) -> None:
    """In place: num_computed[req_indices[i]] += num_scheduled[i] - (num_draft[i] - num_accepted[i])."""
    num_reqs = req_indices.shape[0]
    if num_reqs == 0:
        return
    block = 256
    _correct_num_computed_tokens_kernel[(triton.cdiv(num_reqs, block),)](
        num_computed, req_indices, num_scheduled, num_draft, num_accepted, num_reqs, block,
    )


def correct_num_computed_tokens_reference(num_computed, req_indices, num_scheduled, num_draft, num_accepted) -> None:
    delta = (num_scheduled - (num_draft - num_accepted)).to(num_computed.dtype)
    num_computed.index_add_(0, req_indices.long(), delta)
