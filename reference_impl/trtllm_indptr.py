"""PR 39546: FlashInfer / TRT-LLM prefill page-table offsets computed on the device.

The TRT-LLM prefill kernel needs `paged_kv_indptr`: for each prefill request, where its pages
start in the flattened page list (`cumsum(ceil_div(seq_len, page_size))`, first element 0).

Naive: the guard that skips host sequence lengths covered only decode-only batches
(`is_only_trtllm_decode`), so every mixed batch read `seq_lens_cpu` (a lazy device->host copy,
a sync), filled the offsets on the host and copied them up. Fixed: the guard is widened to
"every part of this batch uses the TRT-LLM kernels" (`all_uses_trtllm`), and the offsets are
computed on the device into a persistent buffer whose first element is zeroed. Batches that some
non-TRT-LLM path handles still take the host path in both versions.

The prefill offsets live in the persistent buffer at the prefills' place in the batch
(`[num_decodes : num_reqs + 1]`), so the element where they start held something else in an
earlier step: zeroing it is part of the fix, not a formality.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from reference_impl.common import ceil_div, check_impl
from reference_impl.seq_lens_upper_bound import CommonAttentionMetadata


@dataclass
class TrtllmMetadata:
    num_decodes: int
    num_prefills: int
    seq_lens: torch.Tensor  # [num_reqs] device
    block_table: torch.Tensor
    paged_kv_indptr: torch.Tensor  # [num_prefills + 1] int32, device: prefill page offsets, from 0
    used_host_path: bool


class TrtllmMetadataBuilder:
    def __init__(
        self,
        page_size: int,
        max_num_reqs: int,
        device: torch.device | str,
        impl: str,
        *,
        prefill_use_trtllm: bool = True,
        decode_use_trtllm: bool = True,
        use_cascade: bool = False,
    ):
        self.page_size = page_size
        self.device = torch.device(device)
        self.impl = check_impl(impl)
        self.prefill_use_trtllm = prefill_use_trtllm
        self.decode_use_trtllm = decode_use_trtllm
        self.use_cascade = use_cascade
        # Persistent buffers, reused every step (the kernels may capture their addresses).
        self.paged_kv_indptr = torch.zeros(max_num_reqs + 1, dtype=torch.int32, device=self.device)
        pin = self.device.type != "cpu"
        self.paged_kv_indptr_cpu = torch.zeros(max_num_reqs + 1, dtype=torch.int32, pin_memory=pin)

    def build(self, common: CommonAttentionMetadata) -> TrtllmMetadata:
        num_decodes, num_prefills = common.num_decodes, common.num_prefills
        if self.impl == "naive":
            is_only_trtllm_decode = num_prefills == 0 and self.decode_use_trtllm
            needs_seq_lens_cpu = self.use_cascade or not is_only_trtllm_decode
        else:
            all_uses_trtllm = (num_prefills == 0 or self.prefill_use_trtllm) and (
                num_decodes == 0 or self.decode_use_trtllm
            )
            needs_seq_lens_cpu = self.use_cascade or not all_uses_trtllm

        # A view of the persistent buffer at the prefills' place in the batch.
        indptr = self.paged_kv_indptr[num_decodes : num_decodes + num_prefills + 1]
        if needs_seq_lens_cpu:
            # Host path. Reusing one pinned staging buffer is safe only because reading
            # seq_lens_cpu just waited for the device, so last step's copy out of it is done.
            seq_lens_cpu = common.seq_lens_cpu  # the lazy property: a sync on first read
            host = self.paged_kv_indptr_cpu[num_decodes : num_decodes + num_prefills + 1]
            host[:1] = 0
            torch.cumsum(ceil_div(seq_lens_cpu[num_decodes:], self.page_size), 0, dtype=torch.int32, out=host[1:])
            indptr.copy_(host, non_blocking=True)
        else:
            # Device path. `indptr[:1].zero_()`, not `indptr[0] = 0`: an integer-index store of a
            # Python number copies a host scalar and blocks; a slice fill is a kernel launch.
            indptr[:1].zero_()
            num_pages = ceil_div(common.seq_lens[num_decodes:], self.page_size)
            torch.cumsum(num_pages, 0, dtype=torch.int32, out=indptr[1:])
        return TrtllmMetadata(
            num_decodes=num_decodes,
            num_prefills=num_prefills,
            seq_lens=common.seq_lens,
            block_table=common.block_table,
            paged_kv_indptr=indptr,
            used_host_path=needs_seq_lens_cpu,
        )
