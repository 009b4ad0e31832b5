from __future__ import annotations

from .. import provenance as P
from ..fix_offers import read_fix
from ._common import show
from .base import Rule


class ScalarConversionOfTensor(Rule):
    """`int(t)`, `float(t)`, `bool(t)`, `complex(t)` read a tensor's value on the host."""

    code = "SYN205"
    name = "scalar-conversion-of-tensor"
    summary = "`int()` / `float()` / `bool()` of a tensor"
    fix_applicability = "sometimes"
    FUNCTIONS = frozenset({"int", "float", "bool", "complex"})

    VALID = [
        "import torch\ndef f(x: torch.Tensor):\n    return int(x.shape[0])\n",
        "import torch\ndef f(lens_cpu: torch.Tensor):\n    return int(lens_cpu.max())\n",
        "def f(n):\n    return int(n)\n",  # unknown value, not a tensor
        # an attribute the file also fills with host data
        "import torch\nclass A:\n    def __init__(self, d):\n        self.lens = torch.zeros(4, device=d)\n"
        "    def reset(self):\n        self.lens = [0] * 4\n    def take(self, parts):\n        return torch.cat(parts[: int(self.lens[0])])\n",
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor):\n    return int(x.max())\n",
        "import torch\ndef f(x):\n    y = torch.sum(x)\n    return float(y)\n",
        "import torch\ndef f(x: torch.Tensor):\n    return bool((x > 0).any())\n",
        # an attribute only ever given device tensors, read through another object
        "import torch\nclass Pool:\n    def __init__(self, d):\n        self.free_slots = torch.arange(8, device=d)\n"
        "def take(pool, parts):\n    n = int(pool.free_slots[0])\n    return torch.cat(parts[:n])\n",
    ]

    def on_call(self, ctx, call):
        if not call.args:
            return
        arg, where = call.args[0]
        # a tensor, or a value read from an attribute the tree keeps only on the device
        needs = ctx.device_field(arg) if where == P.UNKNOWN else None
        if not P.is_tensor_like(where) and needs is None:
            return
        offer = read_fix(ctx, arg)
        ctx.report(
            self, call.node,
            f"`{call.qualname}({show(arg, ctx)})` reads a tensor value on the host and waits for the GPU",
            anchor=call.qualname + "(", subject=arg, fix=offer.fix, no_fix=offer.why_not, needs_device=needs,
        )
