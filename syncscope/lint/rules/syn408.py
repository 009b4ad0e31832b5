from __future__ import annotations

import libcst as cst

from .. import provenance as P
from ._common import show
from .base import Rule

# Calls whose positional arguments are sizes (Python ints): a tensor there is read back.
_SIZE_FUNCTIONS = frozenset("torch.empty torch.zeros torch.ones torch.full torch.rand torch.randn "
                            "torch.arange torch.randint torch.randperm torch.eye torch.split".split())
_SIZE_METHODS = frozenset("new_empty new_zeros new_ones new_full view reshape repeat expand narrow "
                          "split unflatten".split())


class DeviceScalarAsNumber(Rule):
    """A tensor where torch or Python needs a plain number: a slice bound (`x[:n]`,
    `x[:, start:end]`), a size (`torch.empty(n)`, `x.new_zeros(n)`, `x.view(n, -1)`,
    `x.split(n)`, `x.narrow(0, 0, n)`), a `range(n)` bound. torch reads a 0-d device tensor back
    to the host for each of them (measured on torch 2.11, docs/sync-forms.md); a 0-d host tensor
    or a Python int is free."""

    code = "SYN408"
    name = "device-scalar-as-number"
    summary = "A device tensor used as a slice bound, a size or a `range` bound"

    VALID = [
        "import torch\ndef f(x: torch.Tensor, n: int):\n    return x[:n]\n",
        "import torch\ndef f(x: torch.Tensor, lens_cpu: torch.Tensor):\n    return x[: lens_cpu[-1]]\n",
        "import torch\ndef f(x: torch.Tensor):\n    return torch.empty(x.shape[0], device=x.device)\n",
        "import torch\ndef f(x: torch.Tensor, lens: torch.Tensor):\n    return torch.zeros_like(lens)\n",
        "import torch\ndef f(x: torch.Tensor, n: torch.Tensor):\n    return x * n\n",
        # the parts of a zip / enumerate item keep their own places
        "import torch\ndef f(x: torch.Tensor, shapes: torch.Tensor):\n    for tile, (h, w) in zip(x.split(4), shapes.tolist()):\n"
        "        tile = tile.view(h, w, 8)\n",
        "import torch\ndef f(out: torch.Tensor, q: torch.Tensor, k: torch.Tensor):\n    for i, t in enumerate((q, k)):\n"
        "        out[..., i * 4 : (i + 1) * 4].copy_(t)\n",
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor, cu: torch.Tensor):\n    return x[cu[0]:cu[1]]\n",
        "import torch\ndef f(x: torch.Tensor, lens: torch.Tensor):\n    n = lens.sum()\n    return x[:, :n]\n",
        "import torch\ndef f(x: torch.Tensor, lens: torch.Tensor):\n    return torch.empty(lens.max(), device=x.device)\n",
        "import torch\ndef f(x: torch.Tensor, lens: torch.Tensor):\n    return x.new_zeros((lens.sum(), 4))\n",
        "import torch\ndef f(x: torch.Tensor, n: torch.Tensor):\n    for i in range(n):\n        x = x + i\n    return x\n",
    ]

    FUNCTIONS = _SIZE_FUNCTIONS | {"range"}
    METHODS = _SIZE_METHODS

    def on_subscript_read(self, ctx, node, base_where):
        self._bounds(ctx, node)

    def on_subscript_store(self, ctx, target, base_where, value, value_where):
        self._bounds(ctx, target)

    def _bounds(self, ctx, node: cst.Subscript) -> None:
        for element in node.slice:
            if isinstance(element.slice, cst.Slice):
                for bound in (element.slice.lower, element.slice.upper, element.slice.step):
                    if bound is not None and P.is_tensor_like(ctx.analyzer.peek(bound, ctx)):
                        self._report(ctx, bound, "a slice bound")
                        return

    def on_call(self, ctx, call):
        if call.receiver is not None:
            if not P.is_tensor_like(call.receiver_where):
                return  # `str.split(sep)`, `np.ndarray.reshape(n)` on host data
            sizes = call.args[1:] if call.method == "narrow" else call.args
        elif call.qualname == "torch.split":
            sizes = call.args[1:2]
        elif call.qualname == "torch.full":
            sizes = call.args[:2]  # the size and the fill value
        else:
            sizes = call.args
        for node, where in sizes:
            parts = [(e.value, ctx.analyzer.peek(e.value, ctx)) for e in node.elements] \
                if isinstance(node, (cst.Tuple, cst.List)) else [(node, where)]
            for part, part_where in parts:
                if P.is_tensor_like(part_where) and not _is_tensor_argument(call, part):
                    what = "a `range` bound" if call.qualname == "range" else "a size"
                    self._report(ctx, part, what)
                    return

    def _report(self, ctx, node, what: str) -> None:
        ctx.report(
            self, node,
            f"`{show(node, ctx)}` is a tensor used as {what}: torch reads it back to the host and "
            "waits for the GPU (use a host value: a `_cpu` mirror or a Python int kept beside it)",
            subject=node,
        )


def _is_tensor_argument(call, node) -> bool:
    """`x.view(torch.int8)`, `x.repeat(other.shape)`: a dtype or a shape, not a tensor size."""
    return isinstance(node, cst.Attribute) and node.attr.value in ("shape", "dtype")
