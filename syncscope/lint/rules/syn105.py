from __future__ import annotations

from .. import provenance as P
from ._common import first_input, show
from .base import Rule

# Ops whose output shape depends on the data (torch.Tag.dynamic_output_shape, anchors.md 2).
OPS = ("nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "bincount", "histc")


class DataDependentShape(Rule):
    """Ops whose output size depends on tensor values must read something back to allocate the
    result: `nonzero`, `argwhere`, one-argument `where`, `masked_select`, `unique*`, `bincount`,
    `histc`."""

    code = "SYN105"
    name = "data-dependent-output-shape"
    summary = "An op whose output shape depends on device data (nonzero, unique, ...)"
    FUNCTIONS = frozenset({f"torch.{op}" for op in OPS} | {"torch.where"})
    METHODS = frozenset(OPS)

    VALID = [
        "import torch\ndef f(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor):\n    return torch.where(c, a, b)\n",
        "import torch\ndef f(x_cpu: torch.Tensor):\n    return torch.nonzero(x_cpu)\n",
        "import torch\ndef f(x: torch.Tensor, n: int):\n    return torch.nonzero_static(x, size=n)\n",
        "import numpy as np\ndef f(a_np):\n    return np.unique(a_np)\n",
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor):\n    return torch.nonzero(x)\n",
        "import torch\ndef f(x: torch.Tensor):\n    return x.nonzero(as_tuple=True)\n",
        "import torch\ndef f(masks: dict):\n    return [m.nonzero(as_tuple=True) for _, m in masks.items()]\n",
        "import torch\ndef f(x: torch.Tensor):\n    return torch.where(x > 0)\n",
        "import torch as th\ndef f(ids: th.Tensor):\n    return th.unique(ids, return_inverse=True)\n",
        "import torch\ndef f(x: torch.Tensor, m: torch.Tensor):\n    return x.masked_select(m)\n",
        "import torch\ndef f(x: torch.Tensor):\n    return torch.bincount(x)\n",
    ]

    def on_call(self, ctx, call):
        if call.qualname == "torch.where" and (len(call.args) + len(call.kwargs)) != 1:
            return
        source = first_input(call, "input")
        if source is None:
            return
        where = source[1]
        if where == P.PY and call.receiver is not None and call.method == "nonzero" and "as_tuple" in call.kwargs:
            # only torch's `nonzero` takes `as_tuple` (numpy's takes nothing, Python values have
            # none): the receiver is a tensor, whatever guess made it a Python value (the values
            # of a dict's `.items()`: SGLang's `for _, (processor, batch_mask) in ...items()`)
            where = P.TENSOR
        if P.known_host(where):
            return
        op = call.method or (call.qualname or "").rsplit(".", 1)[-1]
        if op == "where":
            op = "where(cond)"
        ctx.report(
            self, call.node,
            f"`{show(call.node.func, ctx)}` has a data-dependent output shape: the host waits "
            f"for the GPU to learn its size ({op})",
            anchor=call.method or None, subject=source[0],
        )
