from __future__ import annotations

from .base import Rule
from .syn501 import synchronize_kind


class StreamSynchronize(Rule):
    """`stream.synchronize()` waits for all work queued on that stream."""

    code = "SYN502"
    name = "stream-synchronize"
    summary = "`stream.synchronize()`"
    METHODS = frozenset({"synchronize"})

    VALID = [
        "import torch\ndef f(stream, other):\n    stream.wait_stream(other)\n",
    ]
    INVALID = [
        "import torch\ndef step():\n    torch.cuda.current_stream().synchronize()\n",
        "def step(self):\n    self.copy_stream.synchronize()\n",
    ]

    def on_call(self, ctx, call):
        if synchronize_kind(ctx, call) == "stream":
            ctx.report(self, call.node, "a stream synchronize: the host waits for everything queued on the stream "
                       "(order work with events and `wait_stream` instead)", anchor="synchronize(")
