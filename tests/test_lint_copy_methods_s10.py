"""Fields a copy method has already copied to the host (session 10, copy_methods.py). Each
VALID package has INVALID twins that stay reported.

A method that replaces its object's tensor fields by host copies of themselves and then
records an event field of the object (`self.copy_done.record()`) is a copy method; a module
that waits on that event (`result.copy_done.synchronize()`) reads the fields after the copies.
SGLang's overlap scheduler: `GenerationBatchResult.copy_to_cpu` and the batch result processor.
"""

from __future__ import annotations

from test_lint_host_facts import lint_package, where

UTIL = """
import torch

def to_host(t):
    if t.device.type == "cpu":
        return t
    if not torch.cuda.is_available():
        return t.to("cpu")
    host = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
    host.copy_(t, non_blocking=True)
    t.record_stream(torch.cuda.current_stream())
    return host

def to_somewhere(t):
    return t.to(t.device, non_blocking=True)
"""

MASKS = """
import torch

class MaskOut:
    def __init__(self, n: int):
        self.lengths = torch.zeros(n, device="cuda")

    def map_fields(self, fn):
        self.lengths = fn(self.lengths)
"""

RESULTS = """
import torch
from typing import List, Optional
from pkg.util import to_host as _to_host, to_somewhere
from pkg.masks import MaskOut

class Logits:
    def __init__(self, n: int):
        self.logprobs = torch.zeros(n, device="cuda")
        self.top_vals = [torch.zeros(n, device="cuda")]
        self.mask = MaskOut(n)

class Output:
    def __init__(self, n: int):
        self.next_ids = torch.zeros(n, device="cuda")
        self.scores = torch.zeros(n, device="cuda")
        self.logits = Logits(n)
        self.copy_done = None

    def copy_to_host(self):
        self.next_ids = COPY(self.next_ids)
        self.logits.logprobs = COPY(self.logits.logprobs)
        self.logits.top_vals = [COPY(v) if torch.is_tensor(v) else v for v in self.logits.top_vals]
        if self.logits.mask is not None:
            self.logits.mask.map_fields(COPY)
        RECORD
"""

READER = """
import torch
from pkg.results import Output, Logits

class ResultHandler:
    def process(self, result: Output):
        if result.copy_done is not None:
            WAIT
        ids = result.next_ids.tolist()
        self.logprobs(result.logits)
        self.mask(result.logits)
        return ids

    def logprobs(self, logits: Logits):
        lp = logits.logprobs.tolist()
        vals = [v.tolist() for v in logits.top_vals]
        return lp, vals

    @staticmethod
    def mask(output: Logits):
        mask = output.mask
        return mask.lengths.tolist()

    def scores(self, result: Output):
        return result.scores.tolist()
"""


def lint(tmp_path, copy: str = "_to_host", record: str = "self.copy_done.record()",
         wait: str = "result.copy_done.synchronize()"):
    files = {"util.py": UTIL, "masks.py": MASKS,
             "results.py": RESULTS.replace("COPY", copy).replace("RECORD", record),
             "reader.py": READER.replace("WAIT", wait)}
    found = where(lint_package(tmp_path, files, include_cold=True))
    # the wait itself (SYN501 at line 8) is no read of the fields
    return sorted({line for path, line, code in found if path == "pkg/reader.py" and code != "SYN501"})


# reader.py lines: 9 ids, 10 and 11 the calls of the readers below, 15 lp, 16 vals, 22 lengths,
# 25 scores (never copied)
ALL = [9, 10, 11, 15, 16, 22, 25]


def test_fields_the_copy_method_copied_are_host_where_the_module_waits_on_its_event(tmp_path):
    # VALID: next_ids, logprobs, top_vals' items and the mapped lengths were copied to the host
    # before the event the reader waits on; `scores` was not copied and stays reported
    assert lint(tmp_path) == [25]


def test_without_a_wait_on_the_event_the_reads_stay_reported(tmp_path):
    # INVALID twin: nothing in the reading module says the copy method has run
    assert lint(tmp_path, wait="pass") == ALL


def test_a_wait_on_another_event_says_nothing(tmp_path):
    # INVALID twin: the module waits on an event no copy method records
    assert lint(tmp_path, wait="result.other_done.synchronize()") == ALL


def test_a_method_that_records_no_event_is_no_copy_method(tmp_path):
    # INVALID twin: the copies are made, but the event the reader waits on marks nothing of them
    assert lint(tmp_path, record="pass") == ALL


def test_a_copy_that_may_stay_on_the_device_is_no_host_copy(tmp_path):
    # INVALID twin: `to_somewhere` keeps the tensor on its device
    assert lint(tmp_path, copy="to_somewhere") == ALL
