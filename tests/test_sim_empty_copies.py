"""A copy with no element moves nothing: ATen's copy_ returns before any transfer, so a GPU does
not wait (no sync-debug warning). Hugging Face's DynamicCache starts each layer with
`torch.tensor([], device=...)`: the simulated device reported an h2d_copy there that the GPU does
not have (found by the parity suite, tests/parity/)."""

from __future__ import annotations

import torch

import syncscope


def test_empty_host_device_copies_are_not_syncs_and_non_empty_ones_still_are():
    with syncscope.trap(device="sim") as t:
        torch.tensor([], device="cuda")
        torch.empty(0, 4).to("cuda")
        torch.empty(0).cuda()
        torch.empty(0, device="cuda").cpu()
        torch.empty(0, device="cuda").tolist()
        base = torch.ones(2).cuda()  # line +6: h2d_copy
        base.new_tensor([])
        base.new_tensor([3])  # line +8: h2d_copy
        torch.tensor([1, 2], device="cuda")  # line +9: h2d_copy
        base.tolist()  # line +10: tolist
        base.cpu()  # line +11: cpu_copy
    first = test_empty_host_device_copies_are_not_syncs_and_non_empty_ones_still_are.__code__.co_firstlineno + 1  # the `with` line: 0
    got = [(e.site.line - first, e.kind) for e in t.events]
    assert got == [(6, "h2d_copy"), (8, "h2d_copy"), (9, "h2d_copy"), (10, "tolist"), (11, "cpu_copy")]
