"""Code that runs only while CUDA graphs are captured (session 9). Each VALID package has an
INVALID twin that stays in the default (per-step) report.

* A method named like per-step work (`forward_*`) that the program calls only under a capture
  test (`if get_is_capture_mode():`) runs only at capture, once per batch size at start-up: it is
  no per-step root (capture_roots.py).
* The arm of a conditional expression under a decided test (`t.cpu() if in_capture else
  t_cpu`) never runs while serving (branches.py `decided_arm`).
"""

from __future__ import annotations

from test_lint_host_facts import lint_package, where

RUNNER = """
_IS_CAPTURE_MODE = False


def get_is_capture_mode():
    return _IS_CAPTURE_MODE
"""

MODEL = """
import torch
from torch import nn

from pkg.runner import get_is_capture_mode


class Block(nn.Module):
    def forward_dual_stream(self, x):
        return x.nonzero()

    def forward_plain(self, x):
        return x.nonzero()

    def forward(self, x):
        if x.shape[0] > 0 and get_is_capture_mode():
            return self.forward_dual_stream(x)
        return self.forward_plain(x)
"""

OTHER_CALLER = """
from pkg.model import Block


def run(block: Block, x):
    return block.forward_dual_stream(x)
"""

BACKEND = """
import torch


class Backend:
    def init_forward_metadata(self, batch, in_capture: bool = False):
        seq_lens_cpu = (
            batch.seq_lens.cpu() if in_capture else batch.seq_lens_cpu
        )
        lens = (
            batch.seq_lens.tolist() if not in_capture else None
        )
        return seq_lens_cpu, lens
"""


def lines(run, path: str) -> list[int]:
    return sorted({line for at, line, _ in where(run) if at == path})


def test_a_forward_variant_called_only_under_a_capture_test_is_no_root(tmp_path):
    # VALID: `forward_dual_stream` runs only while a graph is captured; the eager path is reported
    run = lint_package(tmp_path, {"runner.py": RUNNER, "model.py": MODEL})
    assert lines(run, "pkg/model.py") == [13, 18]


def test_a_forward_variant_also_called_elsewhere_stays_a_root(tmp_path):
    # INVALID twin: another module calls it outside any capture test
    run = lint_package(tmp_path, {"runner.py": RUNNER, "model.py": MODEL, "other.py": OTHER_CALLER})
    assert lines(run, "pkg/model.py") == [10, 13, 18]


def test_a_forward_variant_under_an_unknown_test_stays_a_root(tmp_path):
    # INVALID twin: the test names no capture
    model = MODEL.replace("get_is_capture_mode()", "self.use_dual").replace("from pkg.runner import get_is_capture_mode", "")
    run = lint_package(tmp_path, {"runner.py": RUNNER, "model.py": model})
    assert 10 in lines(run, "pkg/model.py")


def test_forward_itself_stays_a_root_under_a_capture_test(tmp_path):
    # INVALID twin: `nn.Module.__call__` runs `forward` whatever the program's calls of it say
    model = MODEL.replace("def forward(self", "def forward_step(self").replace(
        "def forward_dual_stream", "def forward").replace("self.forward_dual_stream(x)", "self.forward(x)")
    run = lint_package(tmp_path, {"runner.py": RUNNER, "model.py": model})
    assert 10 in lines(run, "pkg/model.py")


def test_a_conditional_arm_under_a_capture_test_is_cold(tmp_path):
    # VALID: `.cpu()` runs only when `in_capture`; INVALID twin: `.tolist()` only when not
    run = lint_package(tmp_path, {"backend.py": BACKEND})
    assert lines(run, "pkg/backend.py") == [11]


GRAPHS = """
import torch


class Block(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Runner:
    def __init__(self):
        self.block = Block()

    def _create_graph(self, key, x):
        self.block(x)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        WITH
            self.out[key] = self.block(x)
        self.graphs[key] = graph

    def forward_step(self, key, x):
        if key not in self.graphs:
            self._create_graph(key, x)
        self.graphs[key].replay()
        return self.out[key]
"""


def test_a_function_that_captures_a_cuda_graph_runs_when_a_graph_is_built(tmp_path):
    # VALID: its warm-up and synchronize come before `with torch.cuda.graph(graph):`
    run = lint_package(tmp_path, {"graphs.py": GRAPHS.replace("WITH", "with torch.cuda.graph(graph):")})
    assert lines(run, "pkg/graphs.py") == []


def test_a_capture_under_an_if_leaves_its_function_per_step(tmp_path):
    # INVALID twin: the capture is one branch of the function; the rest may run every step
    source = GRAPHS.replace("        WITH\n            self.out", "        if key not in self.graphs:\n"
                            "            with torch.cuda.graph(graph):\n                self.out")
    run = lint_package(tmp_path, {"graphs.py": source})
    assert 16 in lines(run, "pkg/graphs.py")


UNRELATED = """
import torch
from torch import nn


class Other(nn.Module):
    def forward_dual_stream(self, x):
        return x * 2

    def forward(self, x):
        return self.forward_dual_stream(x)
"""


def test_a_same_named_method_of_another_class_called_elsewhere_does_not_keep_the_root(tmp_path):
    # VALID: `Other.forward_dual_stream` is called on every step, `Block`'s only under capture
    run = lint_package(tmp_path, {"runner.py": RUNNER, "model.py": MODEL, "other.py": UNRELATED})
    assert lines(run, "pkg/model.py") == [13, 18]
