from __future__ import annotations

from .. import provenance as P
from ._common import show
from .base import Rule


class HostDataSliceStore(Rule):
    """`device[a:b] = host_tensor_or_list` copies host memory to the device with a blocking copy."""

    code = "SYN405"
    name = "host-data-slice-store"
    summary = "Host data stored into a slice of a device tensor"

    VALID = [
        "import torch\ndef f(x: torch.Tensor, n: int):\n    x[:n] = 0\n",
        "import torch\ndef f(x: torch.Tensor, y: torch.Tensor, n: int):\n    x[:n] = y[:n]\n",
        "def f(buf_np, src_np, n):\n    buf_np[:n] = src_np\n",
        "import torch\ndef f(x: torch.Tensor, src_cpu: torch.Tensor, n: int):\n    x[:n].copy_(src_cpu, non_blocking=True)\n",
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor, src_cpu: torch.Tensor, n: int):\n    x[:n] = src_cpu\n",
        "import torch\ndef f(device, token_ids_list):\n    out = torch.zeros(8, device=device)\n    out[:3] = token_ids_list[:3]\n",
    ]

    def on_subscript_store(self, ctx, target, base_where, value, value_where):
        if not P.is_tensor_like(base_where) or value_where != P.HOST:
            return
        ctx.report(
            self, target,
            f"`{show(target, ctx)} = {show(value, ctx)}` copies host data into a device tensor with a "
            "blocking copy (use `copy_(pinned, non_blocking=True)`)",
        )
