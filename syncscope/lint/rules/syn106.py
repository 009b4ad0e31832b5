from __future__ import annotations

from .. import provenance as P
from ._common import first_input, show
from .base import Rule


class OneHotWithoutNumClasses(Rule):
    """`one_hot` without `num_classes` computes `max() + 1` of its input to size the output."""

    code = "SYN106"
    name = "one-hot-without-num-classes"
    summary = "`one_hot` without `num_classes`"
    FUNCTIONS = frozenset({"torch.nn.functional.one_hot"})

    VALID = [
        "import torch.nn.functional as F\nimport torch\ndef f(x: torch.Tensor):\n    return F.one_hot(x, num_classes=8)\n",
        "import torch.nn.functional as F\nimport torch\ndef f(x: torch.Tensor, n: int):\n    return F.one_hot(x, n)\n",
    ]
    INVALID = [
        "import torch.nn.functional as F\nimport torch\ndef f(x: torch.Tensor):\n    return F.one_hot(x)\n",
        "from torch.nn.functional import one_hot\nimport torch\ndef f(x: torch.Tensor):\n    return one_hot(x, num_classes=-1)\n",
    ]

    def on_call(self, ctx, call):
        num_classes = call.kwarg("num_classes")
        if num_classes is None and len(call.args) >= 2:
            num_classes = call.args[1][0]
        if num_classes is not None and ctx.analyzer.module.code_for_node(num_classes).strip() != "-1":
            return
        source = first_input(call, "tensor")
        if source is not None and P.known_host(source[1]):
            return
        ctx.report(
            self, call.node,
            f"`{show(call.node.func, ctx)}` without `num_classes` reads `max()` of its input back "
            "to size the output (pass `num_classes=`)",
            anchor="one_hot", subject=source[0] if source else None,
        )
