from __future__ import annotations

from .. import provenance as P
from ..devices import copy_target, is_non_blocking
from ..fix_offers import Offer, read_fix
from ._common import show
from .base import Invalid, Rule


class BlockingCopyToHost(Rule):
    """`.cpu()`, `.to("cpu")` and `host.copy_(device)` without `non_blocking=True` wait until the
    copy (and everything queued before it) is done."""

    code = "SYN203"
    name = "blocking-copy-to-host"
    summary = "A blocking device->host copy: `.cpu()`, `.to('cpu')`, `host.copy_(device)`"
    fix_applicability = "sometimes"
    METHODS = frozenset({"cpu", "to", "copy_"})

    VALID = [
        "import torch\ndef f(x: torch.Tensor):\n    return x.to('cpu', non_blocking=True)\n",
        "import torch\ndef f(x_cpu: torch.Tensor):\n    return x_cpu.cpu()\n",
        "import torch\ndef f(x: torch.Tensor):\n    return x.to(torch.float16)\n",
        "import torch\ndef f(out_cpu: torch.Tensor, x: torch.Tensor):\n    out_cpu.copy_(x, non_blocking=True)\n",
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor):\n    return x.cpu()\n",
        "import torch\ndef f(x: torch.Tensor):\n    return x.to('cpu')\n",
        "import torch\ndef f(x: torch.Tensor):\n    return x.to(device=torch.device('cpu'))\n",
        "import torch\ndef f(out_cpu: torch.Tensor, x: torch.Tensor):\n    out_cpu.copy_(x)\n",
        Invalid(
            "import torch\ndef f(x_cpu: torch.Tensor):\n    x = x_cpu.cuda()\n    return x.cpu()\n",
            fixed="import torch\ndef f(x_cpu: torch.Tensor):\n    x = x_cpu.cuda()\n    return x_cpu\n",
        ),
    ]

    def on_call(self, ctx, call):
        if is_non_blocking(call):
            return
        if call.method == "cpu":
            if not P.maybe_device(call.receiver_where):
                return
            what, offer = ".cpu()", read_fix(ctx, call.receiver, call.node, "cpu")
        elif call.method == "to":
            if not P.maybe_device(call.receiver_where) or copy_target(call, ctx) != P.HOST:
                return
            what, offer = ".to(cpu)", Offer()
        else:  # dst.copy_(src): a host destination filled from a device source
            if call.receiver_where != P.HOST or not call.args or not P.is_tensor_like(call.args[0][1]):
                return
            what, offer = ".copy_()", Offer()
        ctx.report(
            self, call.node,
            f"`{show(call.receiver, ctx)}{what}` is a blocking device->host copy: the host waits "
            "for the GPU (keep a host mirror, or copy with non_blocking=True and an event)",
            anchor="." + call.method + "(", subject=call.receiver if call.method != "copy_" else call.args[0][0],
            fix=offer.fix, no_fix=offer.why_not,
        )
