from __future__ import annotations

import libcst as cst

from .. import provenance as P
from ..devices import copy_target, is_non_blocking
from ._common import add_keyword, show
from .base import Fix, Invalid, Rule


class BlockingCopyToDevice(Rule):
    """`host.to(device)`, `host.cuda()` and `device.copy_(host)` without `non_blocking=True`: the
    host waits for the copy (and, from pageable memory, stages it synchronously)."""

    code = "SYN403"
    name = "blocking-copy-to-device"
    summary = "A blocking host->device copy: `.to(device)`, `.cuda()`, `dev.copy_(host)`"
    fix_applicability = "unsafe"
    METHODS = frozenset({"to", "cuda", "copy_"})

    VALID = [
        "import torch\ndef f(x_cpu: torch.Tensor, device):\n    return x_cpu.to(device, non_blocking=True)\n",
        "import torch\ndef f(x: torch.Tensor, device):\n    return x.to(device)\n",  # may already be there
        "import torch\ndef f(x_cpu: torch.Tensor):\n    return x_cpu.to(torch.int64)\n",
        "import torch\ndef f(out: torch.Tensor, src_cpu: torch.Tensor):\n    out.copy_(src_cpu, non_blocking=True)\n",
    ]
    INVALID = [
        "import torch\ndef f(x_cpu: torch.Tensor, device):\n    return x_cpu.to(device)\n",
        "import numpy as np, torch\ndef f(a, device):\n    return torch.from_numpy(np.asarray(a)).to(device)\n",
        "import torch\ndef f(x_cpu: torch.Tensor):\n    return x_cpu.cuda()\n",
        "import torch\ndef f(out: torch.Tensor, src_cpu: torch.Tensor):\n    out.copy_(src_cpu)\n",
        # Pinned, as SYN401's fix pins: from pageable memory a non_blocking copy still waits.
        Invalid(
            "import torch\ndef f(x_cpu: torch.Tensor, device):\n    return x_cpu.to(device)\n",
            fixed="import torch\ndef f(x_cpu: torch.Tensor, device):\n    return x_cpu.pin_memory().to(device, non_blocking=True)\n",
        ),
        Invalid(
            "import torch\ndef f(x_cpu: torch.Tensor):\n    return x_cpu.cuda()\n",
            fixed="import torch\ndef f(x_cpu: torch.Tensor):\n    return x_cpu.pin_memory().cuda(non_blocking=True)\n",
        ),
        Invalid(
            "import torch\ndef f(out: torch.Tensor, src_cpu: torch.Tensor):\n    out.copy_(src_cpu)\n",
            fixed="import torch\ndef f(out: torch.Tensor, src_cpu: torch.Tensor):\n    out.copy_(src_cpu.pin_memory(), non_blocking=True)\n",
        ),
    ]

    def on_call(self, ctx, call):
        if is_non_blocking(call):
            return
        if call.method == "to":
            if call.receiver_where != P.HOST or copy_target(call, ctx) != P.DEVICE:
                return
        elif call.method == "cuda":
            if call.receiver_where not in (P.HOST, P.UNKNOWN):
                return
        else:  # dst.copy_(src)
            if not P.is_tensor_like(call.receiver_where) or not call.args or call.args[0][1] != P.HOST:
                return
        ctx.report(
            self, call.node,
            f"`{show(call.receiver, ctx)}.{call.method}(...)` is a blocking host->device copy "
            "(pin the source and pass non_blocking=True)",
            anchor=f".{call.method}(",
            # a copy into a destination the callers pass (`out.copy_(lens_cpu)`) reaches a GPU
            # only where a caller passes a device buffer: the destination decides, not the source
            subject=call.receiver if call.method == "copy_" else None,
            fix=Fix("unsafe", "copy from pinned memory with non_blocking=True (the source must be left unchanged until the copy is done)",
                    lambda: (call.node, _pinned_copy(call.node))),
        )


def _pinned(node: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("pin_memory")))


def _pinned_copy(node: cst.Call) -> cst.Call:
    """`x.to(d)` -> `x.pin_memory().to(d, non_blocking=True)` (likewise `.cuda()`), `dst.copy_(x)`
    -> `dst.copy_(x.pin_memory(), non_blocking=True)`. Pinned as SYN401's fix is: a
    `non_blocking` copy from pageable memory is staged synchronously and still waits."""
    func = node.func
    assert isinstance(func, cst.Attribute)
    if func.attr.value == "copy_":
        first = node.args[0]
        node = node.with_changes(args=[first.with_changes(value=_pinned(first.value)), *node.args[1:]])
    else:
        node = node.with_changes(func=func.with_changes(value=_pinned(func.value)))
    return add_keyword(node, "non_blocking", "True")
