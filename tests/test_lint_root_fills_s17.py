"""A lazy call of a per-step root that fills the field it tests, session 17 (branch `s-sparse17`).

`if self.forward_metadata is None: self.init_forward_metadata(batch)` in a backend's forward
helper: `init_forward_metadata` is a per-step root (library facts `[roots] hot`) that stores
`self.forward_metadata` itself, so the step has filled the field before the forward runs, and
what the root syncs on is reported under the root. The call's lines are cold
(root_fills.py, through memo.py), the forward chains through it leave the default report, and
the root's own sync stays. SGLang's `QwenSparseAttnBackend._resolve_metadata` /
`get_indexer_metadata`. INVALID twins: the root stores another field, the guard tests
something besides the field, the store is in a nested function, a method of another class
holds the root: each keeps the call.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

BACKEND = """
import torch


class SparseBackend:
    def __init__(self):
        self.forward_metadata = None
        self.mode = None

    def init_forward_metadata(self, batch):
        if batch.is_idle():
            self.forward_metadata = None
            return
        self.forward_metadata = self._build(batch)

    def _build(self, batch):
        lens = batch.extend_seq_lens
        total = int(lens.sum().item())
        return torch.arange(total, device=lens.device)

    def _resolve_metadata(self, batch):
        if self.forward_metadata is None:
            self.init_forward_metadata(batch)
        return self.forward_metadata

    def forward_decode(self, q, batch):
        meta = self._resolve_metadata(batch)
        return q[: meta.shape[0]]
"""

LAYER = """
import torch
from torch import nn
from pkg.backend import SparseBackend


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.backend = SparseBackend()

    def forward(self, q: torch.Tensor, batch):
        return self.backend.forward_decode(q, batch)
"""

SYNC = ("pkg/backend.py", 18, "SYN201")  # `lens.sum().item()` under the root
LAZY = ("pkg/backend.py", 23)  # the lazy call of the root


def _run(tmp_path, backend=BACKEND, **overrides):
    return lint_package(tmp_path, {"backend.py": backend, "layer.py": LAYER}, **overrides)


def _lines(run):
    return [(path, line) for path, line, _ in where(run)]


def test_the_lazy_call_of_a_root_that_fills_the_field_is_cold(tmp_path):
    run = _run(tmp_path)
    assert SYNC in where(run), where(run)
    assert LAZY not in _lines(run), where(run)
    # nor does the forward chain through it stay
    assert not [f for f in where(run) if f[0] == "pkg/layer.py" or f[1] == 27], where(run)
    cold = _run(tmp_path, include_cold=True)
    lazy = [f for f in cold.findings if (f.site.path, f.site.line) == LAZY]
    assert lazy and "has not called `init_forward_metadata` yet" in lazy[0].cold, [
        (f.site.path, f.site.line, f.cold) for f in cold.findings]


def test_invalid_the_root_stores_another_field(tmp_path):
    backend = BACKEND.replace("self.forward_metadata = self._build(batch)", "self.metadata = self._build(batch)")
    run = _run(tmp_path, backend=backend)
    assert SYNC in where(run) and LAZY in _lines(run), where(run)


def test_invalid_a_guard_that_tests_more_than_the_field(tmp_path):
    backend = BACKEND.replace("if self.forward_metadata is None:",
                              "if self.forward_metadata is None or batch.mode != self.mode:")
    run = _run(tmp_path, backend=backend)
    assert LAZY in _lines(run), where(run)


def test_invalid_a_store_in_a_nested_function(tmp_path):
    backend = BACKEND.replace(
        "        self.forward_metadata = self._build(batch)\n",
        "        def keep():\n            self.forward_metadata = self._build(batch)\n        keep()\n")
    run = _run(tmp_path, backend=backend)
    assert ("pkg/backend.py", 25) in _lines(run), where(run)  # the lazy call, two lines down


def test_invalid_the_root_of_another_object(tmp_path):
    backend = BACKEND.replace("            self.init_forward_metadata(batch)\n",
                              "            self.inner.init_forward_metadata(batch)\n")
    backend = backend.replace("        self.mode = None\n", "        self.mode = None\n        self.inner = SparseBackend()\n")
    run = _run(tmp_path, backend=backend)
    assert ("pkg/backend.py", 24) in _lines(run), where(run)
