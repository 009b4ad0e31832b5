"""Tests on where a tensor lives narrow it in the arm where they hold (session 10). Each VALID
package has an INVALID twin that stays reported.

`if not x.is_cpu: x = x.cpu()` leaves `x` host data on both paths: the arm moves it, and the
other arm runs only where the test says it already is on the host. So the `x.tolist()` after it
reads host memory (SGLang's n-gram worker stages its previous tokens so); the `.cpu()` in the arm
is still the sync.
"""

from __future__ import annotations

import pytest

from test_lint_host_facts import lint_package, where

STATE = """
import torch

class SpecInfo:
    def __init__(self, n: int):
        self.accept_tokens = torch.zeros(n, device="cuda")
        self.accept_lens = torch.zeros(n, device="cuda")
"""

WORKER = """
import torch
from pkg.state import SpecInfo

class Worker:
    def __init__(self):
        self.info = SpecInfo(8)

    def forward_batch_generation(self, batch):
        tokens, lens = self.info.accept_tokens, self.info.accept_lens
        if TEST:
            tokens = MOVE
            lens = lens.cpu()
        self.tokens = tokens.tolist()
        self.lens = lens.tolist()
        return self.tokens
"""


def lint(tmp_path, test: str, move: str = "tokens.cpu()"):
    files = {"state.py": STATE, "worker.py": WORKER.replace("TEST", test).replace("MOVE", move)}
    return [(line, code) for path, line, code in where(lint_package(tmp_path, files, include_cold=True))
            if path.endswith("worker.py")]


@pytest.mark.parametrize("test, move", [
    ("not tokens.is_cpu", "tokens.cpu()"),
    ("tokens.is_cuda", "tokens.cpu()"),
    ('tokens.device.type != "cpu"', 'tokens.to("cpu")'),
    ('tokens.device.type == "cuda"', "tokens.cpu()"),
])
def test_a_value_moved_to_the_host_unless_the_test_says_it_is_there(tmp_path, test, move):
    # VALID: `tokens.tolist()` (line 14) reads host data on both paths; the arm's copies (12, 13)
    # stay, and so does `lens.tolist()` (15): the test says nothing of `lens` on the other path
    found = lint(tmp_path, test, move)
    assert (14, "SYN202") not in found
    assert (15, "SYN202") in found and (12, "SYN203") in found


@pytest.mark.parametrize("test", ["tokens.is_cpu", 'tokens.device.type == "cpu"', "not tokens.is_cuda",
                                  "tokens.numel() > 0"])
def test_a_value_moved_where_it_already_is_on_the_host_stays_reported(tmp_path, test):
    # INVALID twin: the arm runs where `tokens` is on the host, so the other path keeps it on the
    # device (or, for a test of its size, may): `tokens.tolist()` may read the GPU
    assert (14, "SYN202") in lint(tmp_path, test)


def test_the_arm_the_test_puts_on_the_host_reads_host_data(tmp_path):
    # VALID: inside `if tokens.is_cpu:` the read is host data; after the `if` (no move) it is not
    source = WORKER.replace("""        if TEST:
            tokens = MOVE
            lens = lens.cpu()
""", """        if tokens.is_cpu:
            print(tokens.tolist())
        if lens.is_cuda:
            print("on the GPU")
""")
    found = [(line, code) for path, line, code in where(lint_package(
        tmp_path, {"state.py": STATE, "worker.py": source}, include_cold=True)) if path.endswith("worker.py")]
    assert (12, "SYN202") not in found
    assert (15, "SYN202") in found and (16, "SYN202") in found  # INVALID: untested / only tested
