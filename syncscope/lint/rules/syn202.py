from __future__ import annotations

from .. import provenance as P
from ..fix_offers import read_fix
from ._common import show
from .base import Invalid, Rule


class TolistOnDevice(Rule):
    """`.tolist()` copies a whole tensor to the host and waits for the GPU (seed PR 38361:
    `prepare_chunk_indices` called it on a GPU `cu_seqlens`)."""

    code = "SYN202"
    name = "tolist-on-device"
    summary = "`.tolist()` on a tensor not known to be on the host"
    fix_applicability = "sometimes"
    METHODS = frozenset({"tolist"})

    VALID = [
        "def f(self, n):\n    return self.input_batch.num_tokens_np[:n].tolist()\n",
        "import torch\ndef f(cu_seqlens_cpu: torch.Tensor):\n    return cu_seqlens_cpu.tolist()\n",
        "import torch\ndef f(x: torch.Tensor):\n    return x.cpu().tolist()\n",  # the .cpu() is what SYN203 flags
        # a multimodal input processor runs on the host, before the model
        "import torch\nclass ImageProcessor:\n    def grid(self, grid_thw: torch.Tensor):\n        return grid_thw.tolist()\n",
    ]
    INVALID = [
        "import torch\ndef prepare_chunk_indices(cu_seqlens: torch.Tensor, chunk_size: int):\n    return cu_seqlens.tolist()\n",
        "def f(self):\n    return self.sampled_token_ids.tolist()\n",
        Invalid(
            "import torch\ndef f(cu_seqlens: torch.Tensor):\n    cu_seqlens_cpu = cu_seqlens.cpu()\n    a = cu_seqlens.tolist()\n",
            fixed="import torch\ndef f(cu_seqlens: torch.Tensor):\n    cu_seqlens_cpu = cu_seqlens.cpu()\n    a = cu_seqlens_cpu.tolist()\n",
        ),
    ]

    def on_call(self, ctx, call):
        if call.args or not P.maybe_device(call.receiver_where):
            return
        offer = read_fix(ctx, call.receiver)
        ctx.report(
            self, call.node,
            f"`{show(call.receiver, ctx)}.tolist()` copies a device tensor to the host and waits "
            "for the GPU (compute it from host data)",
            anchor=".tolist(", subject=call.receiver, fix=offer.fix, no_fix=offer.why_not,
        )
