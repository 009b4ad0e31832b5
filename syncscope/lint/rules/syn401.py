from __future__ import annotations

import libcst as cst

from .. import provenance as P
from ..compiled import compiled_constant
from ..devices import device_owner, device_where
from ._common import first_input, show
from .base import Fix, Invalid, Rule


class TensorFromHostDataOnDevice(Rule):
    """`torch.tensor(data, device=...)` builds the tensor in pageable host memory and copies it
    with a blocking copy."""

    code = "SYN401"
    name = "tensor-from-host-data-on-device"
    summary = "`torch.tensor(data, device=...)`: a blocking host->device copy"
    fix_applicability = "unsafe"
    FUNCTIONS = frozenset({"torch.tensor", "torch.as_tensor"})

    VALID = [
        "import torch\ndef f(data):\n    return torch.tensor(data)\n",
        "import torch\ndef f(data):\n    return torch.tensor(data, device='cpu')\n",
        "import torch\ndef f(x: torch.Tensor, device):\n    return torch.as_tensor(x, device=device)\n",
        # memoized: runs once per argument
        "import functools, torch\n@functools.lru_cache\ndef table(device):\n    return torch.tensor([1, 2, 3], device=device)\n",
        "import torch\n_CACHE = {}\ndef table(device):\n    t = _CACHE.get(device)\n    if t is None:\n"
        "        t = torch.tensor([1, 2], device=device)\n        _CACHE[device] = t\n    return t\n",
        # compiled: inductor bakes the constant into the graph
        "import torch\n@torch.compile(dynamic=True)\ndef f(x):\n    return x * torch.tensor([1.0, -2.0], device=x.device)\n",
        # empty: nothing to copy
        "import torch\ndef f(device):\n    return torch.tensor([], dtype=torch.long, device=device)\n",
    ]
    INVALID = [
        "import torch\ndef f(ids, device):\n    return torch.tensor(ids, device=device)\n",
        "import torch\ndef f(x):\n    return x * torch.tensor([1.0, -2.0], device=x.device)\n",
        "import torch\n@torch.compile\ndef f(x, ids):\n    return x * torch.tensor(ids, device=x.device)\n",
        "import torch\ndef f(self, n: int):\n    return torch.tensor([n], dtype=torch.int32, device='cuda')\n",
        Invalid(
            "import torch\ndef f(self, lens):\n    return torch.tensor(lens, dtype=torch.int32, device=self.device)\n",
            fixed="import torch\ndef f(self, lens):\n    return torch.tensor(lens, dtype=torch.int32, pin_memory=True).to(self.device, non_blocking=True)\n",
        ),
        Invalid(
            "import torch\ndef f(self, n):\n    return torch.tensor(\n        [0, n], device=self.device, dtype=torch.int32\n    )\n",
            fixed="import torch\ndef f(self, n):\n    return torch.tensor(\n        [0, n], pin_memory=True, dtype=torch.int32\n    ).to(self.device, non_blocking=True)\n",
        ),
    ]

    def on_call(self, ctx, call):
        device = call.kwarg("device")
        if device is None or device_where(device, ctx) == P.HOST:
            return
        data = first_input(call, "data")
        if data is not None and P.is_tensor_like(data[1]):
            return  # already a tensor: no host data involved
        if data is not None and isinstance(data[0], (cst.List, cst.Tuple)) and not data[0].elements:
            return  # `torch.tensor([], device=d)`: no bytes to copy, so no copy to wait for
        if data is not None and compiled_constant(ctx, data[0]):
            return  # `torch.compile` bakes a constant into the graph (compiled.py)
        ctx.report(
            self, call.node,
            f"`{show(call.node.func, ctx)}(..., device={show(device, ctx)})` copies host data with a "
            "blocking copy (build it in pinned memory and copy with non_blocking=True)",
            anchor=show(call.node.func, ctx) + "(", device_of=device, subject=device_owner(device, ctx),
            fix=Fix("unsafe", "build in pinned memory, copy with non_blocking=True", lambda: (call.node, _pinned(call.node))),
        )


def _pinned(node: cst.Call) -> cst.Call:
    """`torch.tensor(d, device=x)` -> `torch.tensor(d, pin_memory=True).to(x, non_blocking=True)`.
    `pin_memory=True` takes the place of `device=` so the call keeps its layout. Unsafe:
    pinning needs an accelerator at run time, and it changes allocation behaviour."""
    device = None
    args = []
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            device = arg.value
            args.append(arg.with_changes(keyword=cst.Name("pin_memory"), value=cst.Name("True")))
        else:
            args.append(arg)
    base = node.with_changes(args=args)
    return cst.Call(
        func=cst.Attribute(value=base, attr=cst.Name("to")),
        args=[
            cst.Arg(value=device, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Arg(keyword=cst.Name("non_blocking"), value=cst.Name("True"),
                    equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))),
        ],
    )
