from __future__ import annotations

from .. import provenance as P
from ..fix_offers import read_fix
from ._common import show
from .base import Rule


class NumpyOnDevice(Rule):
    """`.numpy(force=True)` on a device tensor copies it to the host and waits. (Plain
    `.numpy()` only works on CPU tensors, so it is flagged only when the receiver is known to be
    on the device.)"""

    code = "SYN204"
    name = "numpy-on-device"
    summary = "`.numpy(force=True)` (or `.numpy()`) on a device tensor"
    fix_applicability = "sometimes"
    METHODS = frozenset({"numpy"})

    VALID = [
        "import torch\ndef f(x: torch.Tensor):\n    return x.cpu().numpy()\n",
        "import torch\ndef f(x: torch.Tensor):\n    return x.numpy()\n",  # must already be on the CPU
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor):\n    return x.numpy(force=True)\n",
        "import torch\ndef f(x):\n    return x.cuda().numpy()\n",
    ]

    def on_call(self, ctx, call):
        force = call.kwarg("force")
        forced = force is not None and not (hasattr(force, "value") and force.value == "False")
        if call.receiver_where == P.DEVICE or (forced and P.maybe_device(call.receiver_where)):
            offer = read_fix(ctx, call.receiver, call.node, "numpy")
            ctx.report(
                self, call.node,
                f"`{show(call.receiver, ctx)}.numpy()` copies a device tensor to the host and waits for the GPU",
                anchor=".numpy(", subject=call.receiver, fix=offer.fix, no_fix=offer.why_not,
            )
