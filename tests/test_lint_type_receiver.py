"""`type(self.base_layer).forward(self, x)` calls the method of that object's class (facts.py).

vLLM 0.33.0's LoRA wrappers run their base layer's `forward` so (`LogitsProcessorWithLoRA.forward`:
`return type(self.base_layer).forward(self, *args, **kwargs)`, with `base_layer: LogitsProcessor`).
The call was read as a method named `forward` on a receiver of unknown class, dispatched by name
to every `forward` that is not a module's: the attention backends' implementations
(`TurboQuantAttentionImpl.forward`), which then showed the LoRA logits processor as their
per-step root. VALID: a receiver whose class is declared reaches that class's method only.
INVALID twin: a receiver of unknown class is still dispatched by name.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

LAYERS = """
from abc import ABC

import torch
from torch import nn


class Logits(nn.Module):
    def forward(self, x: torch.Tensor):
        return x * 2


class Impl(ABC):  # no module: its `forward` is no root of its own
    def forward(self, layer, x: torch.Tensor):
        return int(x.sum().item())
"""

LORA = """
import torch
from torch import nn
from pkg.layers import Logits


class LogitsWithLoRA(nn.Module):
    def __init__(self, base_layer: {declared}):
        super().__init__()
        self.base_layer = base_layer

    def forward(self, *args, **kwargs):
        return type(self.base_layer).forward(self, *args, **kwargs)
"""

SYNC = ("pkg/layers.py", 15, "SYN201")


def test_a_type_receiver_of_a_declared_class_reaches_that_class_only(tmp_path):
    run = lint_package(tmp_path, {"layers.py": LAYERS, "lora.py": LORA.format(declared="Logits")}, include_cold=True)
    found = [f for f in run.findings if (f.site.path, f.site.line, f.code) == SYNC]
    assert found and all(f.cold for f in found)  # nothing per step runs `Impl.forward`


def test_a_type_receiver_of_unknown_class_is_still_dispatched_by_name(tmp_path):
    assert SYNC in where(lint_package(tmp_path, {"layers.py": LAYERS, "lora.py": LORA.format(declared="nn.Module")}))
