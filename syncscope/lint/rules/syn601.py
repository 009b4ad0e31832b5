from __future__ import annotations

from .base import Rule


class HelperSyncsOnArgument(Rule):
    """A call that passes a device value into a function of the linted tree that syncs on that
    parameter, or on a value computed from it, at any depth and across files: the sync is real
    at the call site even though nothing there looks like one. Reported at the call site with
    the chain.

    Unlike the other rules this one runs after every file was analyzed, from the per-function
    summaries (wholeprogram.py)."""

    code = "SYN601"
    name = "helper-syncs-on-argument"
    summary = "A call into a helper that syncs on the argument passed"
    CROSS_FILE = True

    VALID = [
        "import torch\ndef helper(x_cpu):\n    return x_cpu.tolist()\ndef step(lens_cpu: torch.Tensor):\n    return helper(lens_cpu)\n",
        "import torch\ndef helper(x: torch.Tensor):\n    return x + 1\ndef step(lens: torch.Tensor):\n    return helper(lens)\n",
    ]
    INVALID = [
        "import torch\ndef prepare_chunk_indices(cu_seqlens, chunk_size):\n    return cu_seqlens.tolist()\n"
        "def step(cu_seqlens: torch.Tensor):\n    return prepare_chunk_indices(cu_seqlens, 64)\n",
        "import torch\nclass B:\n    def _count(self, mask):\n        return int(mask.sum().item())\n"
        "    def build(self, lens: torch.Tensor):\n        return self._count(lens > 0)\n",
    ]
