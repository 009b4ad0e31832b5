"""A memo test whose body hands the fill to a method of the class (callee_fills.py, for memo.py).

SGLang 0.5.23's DSA attention backend: `if bs not in self.decode_cuda_graph_metadata:
self._build_forward_metadata_cuda_graph(bs, ...); return`, and the builder (named for no field)
syncs on `seq_lens.tolist()` and ends with `self.decode_cuda_graph_metadata[bs] = metadata`. The
readers judged the chain `R, once` (once per batch size). VALID: the called method stores the
entry the test misses (once per key), or the field a None-test finds empty (once per object).
INVALID twins: the method stores another entry, another field, nothing, or the call does not
pass the tested key; the sync stays per step.
"""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

BACKEND = """
    import torch


    class Backend:
        def __init__(self):
            self.metadata = {{}}
            self.table = None

        def init_forward_metadata(self, bs: int, seq_lens: torch.Tensor):
            {test}
                {call}
                return
            self.last = bs

        def _build(self, bs: int, seq_lens: torch.Tensor):
            lens = seq_lens.tolist()
            {store} = lens
"""

KEYED = "if bs not in self.metadata:"
SYNC = [12, 17]  # the call, and the `.tolist()` in the builder


def flagged(tmp_path, test=KEYED, call="self._build(bs, seq_lens)", store="self.metadata[bs]"):
    files = {"backend.py": BACKEND.format(test=test, call=call, store=store)}
    return lines(lint_package(tmp_path, files), "pkg/backend.py")


def test_a_method_storing_the_missing_entry_fills_it_once_per_key(tmp_path):
    assert flagged(tmp_path) == []


def test_a_method_storing_the_empty_field_fills_it_once_per_object(tmp_path):
    assert flagged(tmp_path, test="if self.table is None:", store="self.table") == []


def test_a_method_storing_another_entry_keeps_the_sync(tmp_path):
    assert flagged(tmp_path, store="self.metadata[0]") == SYNC


def test_a_method_storing_another_field_keeps_the_sync(tmp_path):
    assert flagged(tmp_path, test="if self.table is None:", store="self.other") == SYNC


def test_a_call_that_does_not_pass_the_key_keeps_the_sync(tmp_path):
    assert flagged(tmp_path, call="self._build(0, seq_lens)") == SYNC


def test_a_key_passed_by_keyword_keeps_the_sync(tmp_path):
    assert flagged(tmp_path, call="self._build(bs=bs, seq_lens=seq_lens)") == SYNC
