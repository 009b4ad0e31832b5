from __future__ import annotations

from .. import provenance as P
from ..compiled import compiled_constant
from ._common import show
from .base import Rule


class NewTensorFromHostData(Rule):
    """`device_tensor.new_tensor(data)` copies host data to the device with a blocking copy."""

    code = "SYN402"
    name = "new-tensor-from-host-data"
    summary = "`t.new_tensor(data)` on a device tensor: a blocking host->device copy"
    METHODS = frozenset({"new_tensor"})

    VALID = [
        "import torch\ndef f(x_cpu: torch.Tensor, data):\n    return x_cpu.new_tensor(data)\n",
        "import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return x.new_tensor(y)\n",
        "import torch\nBOUNDS = (0.25, 0.75)\n@torch.compile\ndef f(x: torch.Tensor):\n"
        "    return x.new_tensor(BOUNDS, dtype=torch.float32)\n",
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor, ids: list[int]):\n    return x.new_tensor(ids)\n",
        "import torch\ndef f(x: torch.Tensor, n: int):\n    return x.new_tensor([0, n])\n",
        "import torch\nBOUNDS = (0.25, 0.75)\ndef f(x: torch.Tensor):\n    return x.new_tensor(BOUNDS, dtype=torch.float32)\n",
        "import torch\n@torch.compile\ndef f(x: torch.Tensor, ids: list[int]):\n    return x.new_tensor(ids)\n",
    ]

    def on_call(self, ctx, call):
        if not P.maybe_device(call.receiver_where):
            return
        data = call.args[0] if call.args else call.kwargs.get("data")
        if data is None or P.is_tensor_like(data[1]) or data[1] == P.UNKNOWN and call.receiver_where == P.UNKNOWN:
            return
        if compiled_constant(ctx, data[0]):
            return  # `torch.compile` bakes a constant into the graph (compiled.py)
        ctx.report(
            self, call.node,
            f"`{show(call.receiver, ctx)}.new_tensor(...)` copies host data to the device with a blocking copy",
            anchor=".new_tensor(",
        )
