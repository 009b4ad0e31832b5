from __future__ import annotations

import libcst as cst

from .. import provenance as P
from ._common import show
from .base import Rule


class ScalarStoreAtIndex(Rule):
    """`t[i] = python_number` on a device tensor copies the number from the host with a blocking
    copy (a slice store `t[a:b] = 0` is a fill and does not block)."""

    code = "SYN404"
    name = "scalar-store-at-index"
    summary = "A Python number stored at an integer index of a device tensor"

    VALID = [
        "import torch\ndef f(x: torch.Tensor):\n    x[0:1] = 0\n",
        "import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    x[0] = y[3]\n",
        "def f(buf_np, n: int):\n    buf_np[0] = n\n",
        "def f(d):\n    d[0] = 1\n",  # nothing says d is a tensor
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor):\n    x[0] = 0\n",
        "import torch\ndef f(device):\n    out = torch.empty(4, device=device)\n    for i in range(4):\n        out[i] = i * 2\n",
    ]

    def on_subscript_store(self, ctx, target, base_where, value, value_where):
        if not P.is_tensor_like(base_where) or value is None or value_where != P.PY:
            return
        if isinstance(value, (cst.Name,)) and value.value == "None":
            return
        indices = ctx.analyzer.index_where(target, ctx)
        if not indices or any(index is None or where != P.PY or isinstance(index, cst.Ellipsis)
                              or (isinstance(index, cst.Name) and index.value == "None")
                              for index, where in indices):
            return
        ctx.report(
            self, target,
            f"`{show(target, ctx)} = {show(value, ctx)}` stores a Python number into a device tensor "
            "with a blocking copy (fill a slice, or write from a device tensor)",
        )
