from __future__ import annotations

from .. import provenance as P
from ._common import show
from .base import Rule


class TensorAsCondition(Rule):
    """`if t:`, `while t:`, `assert t`, `a if t else b`, `t and x`, `not t`: Python asks the tensor
    for its truth value, which reads it back to the host."""

    code = "SYN206"
    name = "tensor-as-condition"
    summary = "A tensor used as a truth value (if/while/assert/and/or/not)"

    VALID = [
        "import torch\ndef f(x: torch.Tensor):\n    if x is None:\n        return 0\n",
        "import torch\ndef f(x: torch.Tensor):\n    if x.shape[0] > 0:\n        return 1\n",
        "import torch\ndef f(lens_cpu: torch.Tensor):\n    if (lens_cpu > 1).any():\n        return 1\n",
        "def f(n):\n    if n > 2:\n        return 1\n",
        "def f(self):\n    if not self._is_cuda:\n        return 1\n",  # a flag, whatever its last word
        "import cutlass.cute as cute\n@cute.kernel\ndef k(n, m):\n    if n > m:\n        return 1\n",
        # the attribute also holds a host array somewhere in the tree
        "import numpy as np, torch\nclass M:\n    def __init__(self, table, device):\n        self.table = table.to(device)\n"
        "    def host(self, t):\n        self.table = np.asarray(t)\n    def any_missing(self, x):\n        if (self.table == -1).any():\n            return x.to(1)\n",
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor):\n    if (x > 1).any():\n        return 1\n",
        "import torch\ndef f(x: torch.Tensor):\n    while x.sum() > 0:\n        x = x - 1\n",
        "import torch\ndef f(x: torch.Tensor):\n    assert torch.all(x >= 0)\n",
        "import torch\ndef f(x: torch.Tensor):\n    return 1 if not x.any() else 2\n",
        # vLLM 0.30 `map_target_to_draft_ids`: the mapping is moved to the device in __init__
        "import torch\nclass M:\n    def __init__(self, table, device):\n        self.target_to_draft = table.to(device)\n"
        "    def map(self, ids):\n        draft = self.target_to_draft[ids]\n        missing = draft == -1\n"
        "        if missing.any():\n            draft[missing] = 0\n        return draft.to(ids.dtype)\n",
    ]

    def on_condition(self, ctx, test, where, context):
        # a tensor, or a value read from an attribute the tree keeps only on the device
        needs = ctx.device_field(test) if where == P.UNKNOWN else None
        if not P.is_tensor_like(where) and needs is None:
            return
        if ctx.holds_container(test):  # `if parts:` on a list of tensors asks for its length
            return
        ctx.report(
            self, test,
            f"`{show(test, ctx)}` is a tensor used as a truth value ({context}); Python reads it "
            "back to the host and waits for the GPU",
            subject=test, needs_device=needs,
        )
