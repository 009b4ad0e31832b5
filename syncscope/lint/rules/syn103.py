from __future__ import annotations

from .. import provenance as P
from ._common import show
from .base import Rule


class DeviceMaskTensorWrite(Rule):
    """`t[mask] = values` with a device mask and a tensor on the right: index_put_ must know how
    many elements the mask selects, which reads it back to the host."""

    code = "SYN103"
    name = "device-bool-mask-tensor-write"
    summary = "Masked store of a tensor through a boolean mask not known to be on the host"

    VALID = [
        "import torch\ndef step(x: torch.Tensor):\n    x[x < 0] = 0.0\n",  # scalar: masked_fill
        "import torch\ndef step(x: torch.Tensor, y: torch.Tensor):\n    torch.where(x < 0, y, x, out=x)\n",
    ]
    INVALID = [
        "import torch\ndef step(x: torch.Tensor, y: torch.Tensor):\n    x[x < 0] = y\n",
        "import torch\ndef step(x: torch.Tensor, y: torch.Tensor, valid_mask: torch.Tensor):\n    x[valid_mask] = y[valid_mask]\n",
    ]

    def on_subscript_store(self, ctx, target, base_where, value, value_where):
        if P.known_host(base_where) or value_where == P.PY or value_where == P.UNKNOWN:
            return
        for index, where in ctx.analyzer.index_where(target, ctx):
            if index is not None and P.maybe_device(where) and ctx.is_bool(index):
                ctx.report(
                    self, target,
                    f"`{show(target, ctx)} = <tensor>` stores a tensor through a mask that may be on "
                    "the device; the host waits to count the mask (use `torch.where` or `masked_scatter_`)",
                    subject=index,
                )
                return
