from __future__ import annotations

from .base import Rule
from .syn501 import synchronize_kind


class EventSynchronize(Rule):
    """`event.synchronize()` blocks the host until the event is reached. Sometimes that is the
    point (waiting for a non_blocking copy); in a hot path, prefer `stream.wait_event` or query."""

    code = "SYN503"
    name = "event-synchronize"
    summary = "`event.synchronize()`"
    METHODS = frozenset({"synchronize"})

    VALID = [
        "import torch\ndef f(event: torch.cuda.Event):\n    torch.cuda.current_stream().wait_event(event)\n",
    ]
    INVALID = [
        "import torch\ndef step(self):\n    self.copy_event.synchronize()\n",
        "import torch\ndef step():\n    done = torch.cuda.Event()\n    done.record()\n    done.synchronize()\n",
    ]

    def on_call(self, ctx, call):
        if synchronize_kind(ctx, call) == "event":
            ctx.report(self, call.node, "an event synchronize: the host waits until the GPU reaches the event",
                       anchor="synchronize(")
