from __future__ import annotations

from .. import provenance as P
from ._common import show
from .base import Rule


class HostMaskWrite(Rule):
    """`t[mask_cpu] = v` on a device tensor: the write form with a *host* mask blocks (measured),
    unlike the read form."""

    code = "SYN102"
    name = "host-bool-mask-write"
    summary = "Masked store into a device tensor through a host boolean mask"

    VALID = [
        "import torch\ndef step(x: torch.Tensor, mask: torch.Tensor):\n    x[mask] = 0\n",  # device mask, scalar
        "import torch\ndef step(x_cpu: torch.Tensor, mask_cpu: torch.Tensor):\n    x_cpu[mask_cpu] = 0\n",
        # `flags & has_state_cpu` only works if flags is on the host too
        "import torch\ndef step(meta, lens_cpu: torch.Tensor):\n    flags = meta.is_prefilling\n"
        "    both = flags & (lens_cpu > 1)\n    flags[both] = False\n",
    ]
    INVALID = [
        "import torch\ndef step(x: torch.Tensor, mask_cpu: torch.Tensor):\n    x[mask_cpu] = 0\n",
        "import torch\ndef step(x: torch.Tensor, lens_np):\n    done_np = lens_np > 4\n    x[done_np] = -1\n",
    ]

    def on_subscript_store(self, ctx, target, base_where, value, value_where):
        if P.known_host(base_where):
            return
        for index, where in ctx.analyzer.index_where(target, ctx):
            if index is not None and where == P.HOST and ctx.is_bool(index):
                ctx.report(
                    self, target,
                    f"`{show(target, ctx)} = ...` stores through a host boolean mask into a device "
                    "tensor; this blocks the host (use a device mask or `masked_fill_`)",
                    subject=None,
                )
                return
