"""vLLM's shared builder helpers (`vllm/v1/attention/backends/utils.py`) on the simulated device:
the batch splits every builder starts with, the local-attention virtual batches (Llama 4's
chunked attention), and the causal-conv1d metadata of the Mamba/GDN prefill.

    syncscope run --device sim \\
        --scope vllm.v1.attention.backends.utils:split_decodes_and_prefills \\
        --scope vllm.v1.attention.backends.utils:split_decodes_prefills_and_extends \\
        --scope vllm.v1.attention.backends.utils:make_local_attention_virtual_batches \\
        --scope vllm.v1.attention.backends.utils:compute_causal_conv1d_metadata \\
        examples/engines/vllm/backend_utils.py
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import sim_boot  # noqa: E402

sim_boot.boot("vllm.v1.attention.backends.utils")

import torch  # noqa: E402
from batches import BATCHES, common_metadata  # noqa: E402

from vllm.v1.attention.backends import utils  # noqa: E402


def main():
    for name, requests in BATCHES.items():
        if any(r.drafts >= 0 for r in requests):
            continue  # these helpers see a spec batch as decodes of 3 tokens: the splits below
        m = common_metadata(requests)
        decodes, prefills, decode_tokens, prefill_tokens = utils.split_decodes_and_prefills(m, decode_threshold=1)
        expect_decodes = sum(1 for r in requests if r.query == 1)
        assert (decodes, prefills) == (expect_decodes, len(requests) - expect_decodes), (name, decodes, prefills)
        extends = utils.split_decodes_prefills_and_extends(m, decode_threshold=1)
        local, _ = utils.make_local_attention_virtual_batches(32, m, 16)
        conv = utils.compute_causal_conv1d_metadata(m.query_start_loc_cpu, device=m.query_start_loc.device)
        print(f"{name:8s} decodes={decodes} prefills={prefills} tokens={decode_tokens}+{prefill_tokens} "
              f"extends={tuple(int(x) for x in extends)} local_batches={local.num_reqs} conv_chunks={len(conv[0])}")


if __name__ == "__main__":
    main()
