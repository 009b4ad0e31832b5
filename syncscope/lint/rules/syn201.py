from __future__ import annotations

from .. import provenance as P
from ..fix_offers import read_fix
from ._common import show
from .base import Invalid, Rule


class ItemOnDevice(Rule):
    """`.item()` copies one element to the host and waits for every kernel queued before it."""

    code = "SYN201"
    name = "item-on-device"
    summary = "`.item()` on a tensor not known to be on the host"
    fix_applicability = "sometimes"
    METHODS = frozenset({"item"})

    VALID = [
        "import torch\ndef f(lens_cpu: torch.Tensor):\n    return lens_cpu.max().item()\n",
        "import numpy as np\ndef f(x):\n    a = np.asarray(x)\n    return a.sum().item()\n",
        "import torch\ndef f(x: torch.Tensor):\n    y = x.cpu()\n    return y.item()\n",
        "def f(d):\n    return d.item\n",
        # a lazily filled value: the branch runs once
        "import torch\ndef f(self, scale: torch.Tensor):\n    if self._scale is None:\n        self._scale = scale.item()\n    return self._scale\n",
        # the class keeps a host copy (filled in another method)
        "import torch\nclass Out:\n    def enqueue(self, fault: torch.Tensor):\n        self._fault = fault.to('cpu', non_blocking=True)\n"
        "    def get(self):\n        return self._fault.item()\n",
        # a helper named for the host data it returns, called only with host data (its name
        # alone no longer says so: `lens_list(cu_seqlens)` may make that copy from the device)
        "import torch\ndef _counts_cpu(lens: torch.Tensor):\n    return lens.max().item()\n"
        "def step(lens_cpu: torch.Tensor):\n    return _counts_cpu(lens_cpu)\n",
        # pinned and copied to the device with non_blocking=True: the source was on the host
        "import torch\ndef f(lens: torch.Tensor, device):\n    lens_dev = lens.to(device, non_blocking=True)\n    return lens.max().item()\n",
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor):\n    return x.sum().item()\n",
        "def f(self):\n    return self.num_accepted.item()\n",
        Invalid(
            "import torch\ndef f(n_cpu: torch.Tensor):\n    n = n_cpu.cuda()\n    return n.item()\n",
            fixed="import torch\ndef f(n_cpu: torch.Tensor):\n    n = n_cpu.cuda()\n    return n_cpu.item()\n",
        ),
    ]

    def on_call(self, ctx, call):
        if call.args or not P.maybe_device(call.receiver_where):
            return
        offer = read_fix(ctx, call.receiver)
        ctx.report(
            self, call.node,
            f"`{show(call.receiver, ctx)}.item()` copies a device value to the host and waits for "
            "the GPU (keep a host mirror of it)",
            anchor=".item(", subject=call.receiver, fix=offer.fix, no_fix=offer.why_not,
        )
