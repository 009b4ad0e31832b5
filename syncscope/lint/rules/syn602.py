from __future__ import annotations

from .base import Rule


class CallReachesSync(Rule):
    """A call, or a read of a property, in code that runs every step, whose callee syncs whatever
    it is given: its own body does, or a function it calls does, at any depth and across files
    (a `@property` getter that copies to the host, a cached helper that calls `.tolist()`, a
    method reached through `self._helper()` that calls `event.synchronize()`). Reported at the
    call with the whole chain down to the line that syncs.

    Like SYN601 it runs after every file was analyzed, on the per-function summaries
    (wholeprogram.py): the callee's summary says it syncs, and the chain says why."""

    code = "SYN602"
    name = "call-reaches-sync"
    summary = "A call or property read whose callee syncs, at any depth"
    CROSS_FILE = True

    VALID = [
        "import torch\nclass M:\n    @property\n    def n(self):\n        return self._n_cpu.sum()\n"
        "def step(m: M):\n    return m.n\n",
        "import torch\ndef helper(x_cpu):\n    return x_cpu.tolist()\ndef step(lens_cpu):\n    return helper(lens_cpu)\n",
    ]
    INVALID = [
        "import torch\nclass Meta:\n    @property\n    def seq_lens_cpu(self):\n"
        "        return self.seq_lens.to('cpu')\n    @property\n    def max_len(self):\n"
        "        return int(self.seq_lens_cpu.max())\ndef build(meta: Meta):\n    return meta.max_len\n",
        "import functools, torch\nclass Batch:\n    @functools.cached_property\n    def total(self):\n"
        "        return self.counts.sum().item()\ndef step(batch: Batch):\n    return batch.total\n",
        "class Runner:\n    def _wait(self, event):\n        event.synchronize()\n"
        "    def step(self, event):\n        self._wait(event)\n",
    ]
