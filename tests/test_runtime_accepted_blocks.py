"""Syncs inside a block the code accepts them in, at run time (runtime/accepted_blocks.py): a
sync with a frame inside `with gpu_sync_allowed():` on its stack is recorded allowed, with the
words the linter uses for it (syncscope/lint/with_blocks.py), so it never enters a baseline nor
fails the gate. vLLM's own manager is a no-op unless its check is on; the block is read from the
source. The trap's `allow_sync` keeps its own reason."""

from __future__ import annotations

import json
import subprocess
import sys
from contextlib import contextmanager

import pytest

from syncscope.events import SyncKind
from syncscope.runtime import regions
from syncscope.runtime.policy import HostSyncError, Policy
from syncscope.runtime.recorder import Recorder
from test_runtime_core import fresh_scoping  # noqa: F401  (autouse: each test gets its own trap state)

ACCEPTED = "accepted by the code: inside `with gpu_sync_allowed()`"


@contextmanager
def gpu_sync_allowed(first_only: bool = False):
    yield  # as vLLM's with its check off: nothing at run time says the block was entered


def sync_here(recorder):
    return recorder.record(SyncKind.ITEM, "Tensor.item", blocked_ns=1000)


def test_a_sync_in_the_block_is_allowed_with_the_linters_words():
    rec = Recorder(policy=Policy.ERROR)
    with gpu_sync_allowed():
        event = sync_here(rec)
    assert event.allowed and event.allow_reason == ACCEPTED


def test_the_allowance_holds_for_what_the_block_calls():
    rec = Recorder(policy=Policy.ERROR)
    with gpu_sync_allowed():
        event = (lambda: sync_here(rec))()
    assert event.allowed and event.allow_reason == ACCEPTED


def test_outside_the_block_or_narrowed_by_a_keyword_it_is_a_sync():
    rec = Recorder(policy=Policy.ERROR)
    with pytest.raises(HostSyncError):
        sync_here(rec)
    with pytest.raises(HostSyncError):
        with gpu_sync_allowed(first_only=True):
            sync_here(rec)


def test_allow_sync_keeps_its_own_reason():
    rec = Recorder(policy=Policy.ERROR)
    with regions.allow_sync("warm-up"):
        event = sync_here(rec)
    assert event.allow_reason == "warm-up"


PROGRAM = '''\
from contextlib import contextmanager

import torch


@contextmanager
def gpu_sync_allowed():
    yield


def step(x):
    with gpu_sync_allowed():
        n = x.sum().item()
    return n + x.max().item()


step(torch.arange(8, device="cuda"))
'''


def _run(tmp_path, *device: str):
    (tmp_path / "prog.py").write_text(PROGRAM)
    run = subprocess.run([sys.executable, "-m", "syncscope", "run", *device, "--no-table", "-o", "r.json",
                          "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    by_line = {site["line"]: site for site in json.loads((tmp_path / "r.json").read_text())["sites"]}
    assert by_line[13]["allowed"] and by_line[13]["allow_reason"] == ACCEPTED
    assert not by_line[14]["allowed"]
    return by_line


def test_a_run_on_the_simulated_device_reports_the_block_allowed(tmp_path):
    _run(tmp_path, "--device", "sim")


@pytest.mark.gpu
def test_a_run_on_the_gpu_reports_the_block_allowed_and_times_it(tmp_path):
    by_line = _run(tmp_path)
    assert by_line[13]["blocked_measured"] == 1  # a real wait, timed as any other
