"""The five vLLM sync fixes syncscope is built around, each as a naive and a sync-free builder.

One module per change; in each, the naive and the fixed variant are one class with an
`impl="naive" | "fixed"` argument, sharing every line but the ones that differ, and each line
that syncs in the naive variant carries a `# sync: <kind>` comment (the tests find the expected
sync sites through these comments):

- `gdn_spec_decode`       PR 38047  host boolean masks, `repeat_interleave(..., output_size=)`
- `gdn_chunk_indices`     PR 38361  chunk indices from `cu_seqlens_cpu`, passed down as arguments
- `seq_lens_upper_bound`  PR 40654  a host upper bound instead of a lazy syncing `seq_lens_cpu`
- `trtllm_indptr`         PR 39546  `paged_kv_indptr` computed on the device
- `async_spec_decode`     PR 32951  optimistic host schedule, device-side correction, Triton slot mapping
- `kernels`               the Triton kernels, each with a plain-torch reference

Every builder takes a `device`: `"cuda"` on a GPU or under syncscope's simulated device, `"cpu"`
for plain equivalence tests (Triton then needs `TRITON_INTERPRET=1`).
See docs/reference_impl.md.
"""

from reference_impl.common import IMPLS, ScheduledBatch

__all__ = ["IMPLS", "ScheduledBatch"]
