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
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor):\n    if (x > 1).any():\n        return 1\n",
        "import torch\ndef f(x: torch.Tensor):\n    while x.sum() > 0:\n        x = x - 1\n",
        "import torch\ndef f(x: torch.Tensor):\n    assert torch.all(x >= 0)\n",
        "import torch\ndef f(x: torch.Tensor):\n    return 1 if not x.any() else 2\n",
    ]

    def on_condition(self, ctx, test, where, context):
        if not P.is_tensor_like(where):
            return
        ctx.report(
            self, test,
            f"`{show(test, ctx)}` is a tensor used as a truth value ({context}); Python reads it "
            "back to the host and waits for the GPU",
            subject=test,
        )
