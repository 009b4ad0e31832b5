from __future__ import annotations

from .. import provenance as P
from ..fix_offers import mask_fix
from ._common import show
from .base import Invalid, Rule


class DeviceMaskIndex(Rule):
    """`t[mask]` (read) where the boolean mask may be on the device: PyTorch must count the true
    elements to size the result, which reads the mask back to the host."""

    code = "SYN101"
    name = "device-bool-mask-index"
    summary = "Boolean-mask indexing (read) with a mask not known to be on the host"
    fix_applicability = "sometimes"

    VALID = [
        "import torch\ndef build(x: torch.Tensor, spec_mask_cpu: torch.Tensor):\n    return x[spec_mask_cpu]\n",
        "import torch\ndef build(x: torch.Tensor, idx: torch.Tensor):\n    return x[idx]\n",  # long index
        "import torch\ndef build(x: torch.Tensor, n: int):\n    return x[:n]\n",
        "import numpy as np\ndef build(lens_np, n):\n    return lens_np[lens_np > n]\n",
        "import torch\ndef __init__(self, x: torch.Tensor):\n    self.y = x[x > 0]\n",  # runs once
        # indices of what to keep, not a mask: the name's last word (before `_device`) says so
        "import torch\ndef build(x: torch.Tensor, keep: list):\n"
        "    keep_indices_device = torch.tensor(keep).to(x.device, non_blocking=True)\n"
        "    return x[keep_indices_device]\n",
    ]
    INVALID = [
        "import torch\ndef build(x: torch.Tensor):\n    return x[x > 0]\n",
        "import torch\ndef build(x: torch.Tensor, seq_lens: torch.Tensor):\n    spec_mask = seq_lens > 1\n    return x[spec_mask]\n",
        "import torch\ndef build(x, spec_sequence_masks):\n    return x[~spec_sequence_masks]\n",
        "import torch\ndef build(x: torch.Tensor, keep_device: torch.Tensor):\n    return x[keep_device]\n",
        # a device mask on one branch is a sync on that branch
        "import torch\ndef build(self, common, naive: bool):\n    spec_mask = common.num_draft_tokens > 0\n"
        "    if naive:\n        spec = spec_mask\n    else:\n        spec = self.upload_indices()\n"
        "    return common.block_table[spec]\n",
        Invalid(
            "import torch\ndef build(x: torch.Tensor, mask_cpu: torch.Tensor):\n"
            "    mask = mask_cpu.to(x.device, non_blocking=True)\n    return x[mask]\n",
            fixed="import torch\ndef build(x: torch.Tensor, mask_cpu: torch.Tensor):\n"
            "    mask = mask_cpu.to(x.device, non_blocking=True)\n    return x[mask_cpu]\n",
        ),
    ]

    def on_subscript_read(self, ctx, node, base_where):
        if P.known_host(base_where):
            return
        for value, where in ctx.analyzer.index_where(node, ctx):
            if value is None or P.known_host(where) or not ctx.is_bool(value):
                continue
            offer = mask_fix(ctx, value)
            ctx.report(
                self, node,
                f"`{show(node, ctx)}` indexes with a boolean mask that may be on the device; "
                "the host waits for the GPU to count it (index with a host mask)",
                subject=value, fix=offer.fix, no_fix=offer.why_not,
            )
            return
