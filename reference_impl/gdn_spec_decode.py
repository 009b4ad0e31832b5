"""PR 38047: GDN spec-decode metadata with host boolean masks.

A gated-delta-net (linear attention) layer runs spec-decode requests (last token + drafts) through
a different kernel from plain decodes and prefills, so the builder splits the batch: which
sequences are spec decodes, their query start locations, their recurrent-state slots (one per
draft position), and a per-token mask from which the tokens of each group are gathered.

Naive: the sequence mask lives on the device. Indexing a tensor with a device boolean mask must
learn how many elements are true to size its output: a device->host read, one sync per index.
`torch.repeat_interleave` with device `repeats` and no `output_size` syncs to size its output.
Fixed: the indices come from the host mask and pass `output_size`, known on the host. PR 38047
indexes with the host mask itself and leaves PyTorch to turn it into indices and upload them, once
per index; here the host computes the two index arrays (`np.flatnonzero`) and uploads both in one
copy from the builder's persistent pinned staging, and the five gathers take device integer
indices (no host read: the output sizes are the index lengths).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from reference_impl.common import PinnedStaging, check_impl
from reference_impl.seq_lens_upper_bound import CommonAttentionMetadata


@dataclass
class GDNSpecDecodeMetadata:
    num_spec_decodes: int
    num_non_spec: int
    num_spec_tokens: int
    num_non_spec_tokens: int
    spec_state_indices: torch.Tensor  # [num_spec_decodes, num_speculative_tokens + 1]
    non_spec_state_indices: torch.Tensor  # [num_non_spec]
    spec_query_start_loc: torch.Tensor  # [num_spec_decodes + 1] int32
    non_spec_query_start_loc: torch.Tensor  # [num_non_spec + 1] int32
    num_accepted_tokens: torch.Tensor  # [num_spec_decodes]: accepted in the previous step
    spec_token_indices: torch.Tensor  # [num_spec_tokens] token rows of the spec group
    non_spec_token_indices: torch.Tensor  # [num_non_spec_tokens]


def _query_start_loc(query_lens: torch.Tensor, n: int) -> torch.Tensor:
    qsl = torch.zeros(n + 1, dtype=torch.int32, device=query_lens.device)
    torch.cumsum(query_lens, 0, dtype=torch.int32, out=qsl[1:])
    return qsl


class GDNSpecDecodeMetadataBuilder:
    def __init__(self, num_speculative_tokens: int, device: torch.device | str, impl: str):
        self.num_speculative_tokens = num_speculative_tokens
        self.device = torch.device(device)
        self.impl = check_impl(impl)
        self.staging = PinnedStaging(self.device)  # persistent pinned buffers, allocated once

    def build(self, common: CommonAttentionMetadata, num_accepted_tokens: torch.Tensor) -> GDNSpecDecodeMetadata:
        """`common.block_table[:, k]` is the state slot of draft position k; `num_accepted_tokens`
        ([num_reqs], device) comes from the previous step's verification."""
        naive = self.impl == "naive"
        # Both masks are cheap to make: the device one from device data, the host one from the
        # scheduler's host copy. The fix is only about which one indexes.
        spec_mask_cpu = common.num_draft_tokens_cpu > 0
        spec_mask = common.num_draft_tokens > 0
        num_spec = int(spec_mask_cpu.sum())
        num_tokens = common.num_actual_tokens
        qsl_cpu = common.query_start_loc_cpu
        num_spec_tokens = int((qsl_cpu[1:] - qsl_cpu[:-1])[spec_mask_cpu].sum())

        if naive:
            spec, non_spec = spec_mask, ~spec_mask  # device masks: every index below reads the device
        else:  # <- the fix: indices from the host mask, uploaded without a sync
            mask_np = spec_mask_cpu.numpy()
            spec, non_spec = self.staging.upload(np.flatnonzero(mask_np), np.flatnonzero(~mask_np))
        query_lens = common.query_start_loc[1:] - common.query_start_loc[:-1]
        width = self.num_speculative_tokens + 1
        spec_state_indices = common.block_table[spec, :width]  # sync: bool_mask_index
        non_spec_state_indices = common.block_table[:, 0][non_spec]  # sync: bool_mask_index
        spec_query_lens = query_lens[spec]  # sync: bool_mask_index
        non_spec_query_lens = query_lens[non_spec]  # sync: bool_mask_index
        num_accepted = num_accepted_tokens[spec]  # sync: bool_mask_index

        if naive:
            token_mask = torch.repeat_interleave(spec_mask, query_lens)  # sync: repeat_interleave
        else:
            token_mask = torch.repeat_interleave(spec_mask, query_lens, output_size=num_tokens)
        # Non-spec tokens first, then spec tokens, each group in batch order: a stable sort of
        # the per-token mask, a fixed-size op that needs no host read.
        order = torch.argsort(token_mask.to(torch.int8), stable=True)

        num_non_spec = common.num_reqs - num_spec
        return GDNSpecDecodeMetadata(
            num_spec_decodes=num_spec,
            num_non_spec=num_non_spec,
            num_spec_tokens=num_spec_tokens,
            num_non_spec_tokens=num_tokens - num_spec_tokens,
            spec_state_indices=spec_state_indices,
            non_spec_state_indices=non_spec_state_indices,
            spec_query_start_loc=_query_start_loc(spec_query_lens, num_spec),
            non_spec_query_start_loc=_query_start_loc(non_spec_query_lens, num_non_spec),
            num_accepted_tokens=num_accepted,
            spec_token_indices=order[num_tokens - num_spec_tokens :],
            non_spec_token_indices=order[: num_tokens - num_spec_tokens],
        )
