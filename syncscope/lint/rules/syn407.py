from __future__ import annotations

import libcst as cst

from .. import provenance as P
from ._common import show
from .base import Rule


class HostIndexGather(Rule):
    """`x[idx]` on a device tensor with an index that lives on the host (a CPU tensor, a numpy
    array, a list): torch copies the index to the device with a blocking copy before it gathers.
    Measured on torch 2.11 (docs/sync-forms.md): pageable, pinned and int32 host indices,
    `x[[1, 5, 7]]`, `x[:, idx_cpu]` and `x[rows_cpu, cols_cpu]` all wait; a device index does
    not, nor does a boolean mask on the host (torch finds its positions on the host)."""

    code = "SYN407"
    name = "host-index-gather"
    summary = "Indexing a device tensor with an index tensor or list that lives on the host"

    VALID = [
        "import torch\ndef f(device, pos: torch.Tensor):\n    cos = torch.ones(8, device=device)\n    return cos[pos]\n",
        "import torch\ndef f(device, mask_cpu: torch.Tensor):\n    cos = torch.ones(8, device=device)\n    return cos[mask_cpu]\n",
        "import torch\ndef f(table_cpu: torch.Tensor, ids_cpu: torch.Tensor):\n    return table_cpu[ids_cpu]\n",
        "import torch\ndef f(device, pos_cpu: torch.Tensor):\n    cos = torch.ones(8, device=device)\n"
        "    return cos[pos_cpu.to(device, non_blocking=True)]\n",
        "import torch\ndef f(device, i: int):\n    cos = torch.ones(8, device=device)\n    return cos[i]\n",
    ]
    INVALID = [
        "import torch\ndef f(device, pos_ids_cpu: torch.Tensor):\n    cos = torch.ones(8, device=device)\n    return cos[pos_ids_cpu]\n",
        "import torch\ndef f(device, n: int):\n    cos = torch.ones(8, device=device)\n    pos = torch.arange(n)\n    return cos[pos]\n",
        "import torch\ndef f(device):\n    cos = torch.ones(8, device=device)\n    return cos[[1, 5, 7]]\n",
        "import numpy as np, torch\ndef f(device, lens):\n    cos = torch.ones(8, device=device)\n    return cos[:, np.cumsum(lens)]\n",
    ]

    def on_subscript_read(self, ctx, node, base_where):
        # only a base known to be on the device: an index on the host next to a tensor of
        # unknown device usually means the tensor is a host mirror too
        needs = None if base_where == P.DEVICE else ctx.device_field(node.value)
        if base_where != P.DEVICE and needs is None:
            return
        for index, where in ctx.analyzer.index_where(node, ctx):
            if _copied(index):
                continue  # `pos_cpu.to(device, non_blocking=True)`: moved before it indexes
            host_index = isinstance(index, (cst.List, cst.ListComp)) or (
                where == P.HOST and index is not None and not ctx.is_bool(index))
            if host_index:
                ctx.report(
                    self, node,
                    f"`{show(node, ctx)}` gathers from a device tensor with the host index "
                    f"`{show(index, ctx)}`: torch copies it to the device with a blocking copy "
                    "(copy the index once with `non_blocking=True` from pinned memory, or build it "
                    "on the device)",
                    subject=node.value, needs_device=needs,
                )
                return


def _copied(index) -> bool:
    return isinstance(index, cst.Call) and isinstance(index.func, cst.Attribute) \
        and index.func.attr.value in ("to", "cuda")
