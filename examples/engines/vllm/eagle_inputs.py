"""EAGLE's input preparation (`vllm.v1.spec_decode.eagle`) on the simulated device: after the
target model verified the drafts, `prepare_inputs_padded` (the async-scheduling path: rejected
tokens stay as padding, counts stay on the device) and `prepare_inputs` (the synchronous path:
the sampled tokens are already on the host) build the drafter's batch.

    syncscope run --device sim \\
        --scope vllm.v1.spec_decode.eagle:EagleProposer.prepare_inputs_padded \\
        --scope vllm.v1.spec_decode.eagle:EagleProposer.prepare_inputs \\
        examples/engines/vllm/eagle_inputs.py

The proposer is vLLM's `EagleProposer` made without its `__init__` (which loads the draft model):
it holds what these two methods read (`token_arange_np`).
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import sim_boot  # noqa: E402

sim_boot.boot("vllm.v1.spec_decode.eagle", "vllm.v1.spec_decode.metadata")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from batches import BATCHES, DEVICE, common_metadata  # noqa: E402

from vllm.v1.spec_decode.eagle import EagleProposer  # noqa: E402
from vllm.v1.spec_decode.metadata import SpecDecodeMetadata  # noqa: E402


def main():
    proposer = EagleProposer.__new__(EagleProposer)
    proposer.token_arange_np = np.arange(8192)
    requests = BATCHES["spec_decode"]
    drafts = [[11 + i, 12 + i] for i in range(len(requests))]
    accepted = [r.accepted for r in requests]  # tokens the verification kept, bonus token included

    m = common_metadata(requests)
    spec_meta = SpecDecodeMetadata.make_dummy(drafts, device=DEVICE)
    valid = torch.tensor(accepted, dtype=torch.int32).pin_memory().to(DEVICE, non_blocking=True)
    padded, sample_at, rejected = proposer.prepare_inputs_padded(m, spec_meta, valid)
    assert padded.num_actual_tokens == m.num_actual_tokens

    m = common_metadata(requests)
    sampled = [[7] * n for n in accepted]
    new_m, token_indices = proposer.prepare_inputs(m, sampled, [len(d) for d in drafts])
    expect = sum(accepted)
    assert new_m.num_actual_tokens == expect, (new_m.num_actual_tokens, expect)
    print(f"padded: tokens={padded.num_actual_tokens}  unpadded: tokens={new_m.num_actual_tokens} "
          f"(accepted {accepted})")
    print("sample at", sample_at.cpu().tolist(), "rejected", rejected.cpu().tolist(), "indices", token_indices.cpu().tolist())


if __name__ == "__main__":
    main()
