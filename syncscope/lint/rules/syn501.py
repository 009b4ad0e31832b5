from __future__ import annotations

import libcst as cst

from ..field_makers import foreign_field
from ..imports import dotted
from .base import Rule

DEVICE_SYNC_FUNCTIONS = frozenset(
    f"torch.{ns}.synchronize" for ns in ("cuda", "accelerator", "xpu", "mps", "npu", "mtia")
)


def synchronize_kind(ctx, call) -> str | None:
    """'device', 'stream' or 'event' for a `synchronize()` call; None if it is not one."""
    if call.receiver is None:
        if call.qualname in DEVICE_SYNC_FUNCTIONS:
            return "device"
        return None
    if call.method != "synchronize" or call.args:
        return None
    receiver = call.receiver
    if isinstance(receiver, cst.Call):
        made_by = ctx.resolve(receiver.func) or dotted(receiver.func) or ""
        last = made_by.rsplit(".", 1)[-1].lower()
        if "stream" in last:
            return "stream"
        if "event" in last:
            return "event"
        return "device"
    while isinstance(receiver, cst.Subscript):  # `self._copy_events[i].synchronize()`
        receiver = receiver.value
    if foreign_field(ctx, receiver):  # `self.corpus.synchronize()`, a tree or native object
        return None
    text = (dotted(receiver) or "").lower()
    known = ctx.types.get(dotted(receiver) or "", "").lower()
    last = text.rsplit(".", 1)[-1]
    if "event" in known or "event" in last:
        return "event"
    if "stream" in known or "stream" in last:
        return "stream"
    return "device"


class DeviceSynchronize(Rule):
    """`torch.cuda.synchronize()` waits for all work on the device. (`set_sync_debug_mode` does
    not even report it.)"""

    code = "SYN501"
    name = "device-synchronize"
    summary = "`torch.cuda.synchronize()` and other whole-device synchronizations"
    FUNCTIONS = DEVICE_SYNC_FUNCTIONS
    METHODS = frozenset({"synchronize"})

    VALID = [
        "import torch\ndef f(event):\n    event.record()\n    return event.query()\n",
        "import torch\ndef warmup(self):\n    torch.cuda.synchronize()\n",  # runs once
        # an object of a class of the tree, or built by a native extension: no GPU wait here
        "from corpus import Corpus\nclass W:\n    def __init__(self):\n        self.corpus = Corpus(10)\n"
        "    def step(self):\n        self.corpus.synchronize()\n",
    ]
    INVALID = [
        "import torch\ndef step():\n    torch.cuda.synchronize()\n",
        "from torch import cuda\ndef step():\n    cuda.synchronize()\n",
        "def step(self):\n    current_platform.synchronize()\n",
        "import torch\nclass W:\n    def __init__(self):\n        self.done = torch.cuda.Event()\n"
        "    def step(self):\n        self.done.synchronize()\n",
        "class W:\n    def __init__(self, done):\n        self.done = done\n    def step(self):\n        self.done.synchronize()\n",
    ]

    def on_call(self, ctx, call):
        if synchronize_kind(ctx, call) == "device":
            ctx.report(self, call.node, "a whole-device synchronize: the host waits for all queued GPU work",
                       anchor="synchronize(")
