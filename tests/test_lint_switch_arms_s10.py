"""Devices a switch picks, fields bound in the switch's arms (session 10). Each VALID package has an
INVALID twin that stays reported.

- A field bound in the arms of an `if` (`self.dev = "cpu"` in one, `self.dev = group.device` in
  the other) is the host's device when the arm that gives it anything else runs only where an
  environment variable the tree declares off and never sets is on, or where a value the same
  method asserts false (`assert not cfg().overlap_off`) is true; the test may be a local bound
  once to an `or` of such parts (`use_gpu = cfg().overlap_off or envs.X.get()`). A tensor field
  built with `device=self.dev` is host data then (SGLang's `PrefillDelayer._gather_device`), and
  `torch.tensor(data, device=self.dev)` copies nothing to a device. An assertion counts where it
  comes before the arm, or anywhere in `__init__` (no object exists when it fails).
- A method of a local computed from a call's result (`col = self._gather(...)[:, 0]; col.min()`)
  is that result's data, as `self._gather(...)[:, 0].min()` already was: where the callee returns
  host data, `.item()` on it is no sync.
"""

from __future__ import annotations

from test_lint_host_facts import lint_package, where

ENVIRON = """
class EnvField:
    def __init__(self, default):
        self.default = default

    def get(self):
        return self.default


class EnvBool(EnvField):
    pass


class Envs:
    APP_GPU_GATHER = EnvBool(DEFAULT)


envs = Envs()
"""

CONFIG = """
class Schedule:
    overlap_off = False


def cfg():
    return Schedule()
"""

DELAYER = """
import torch
import torch.distributed as dist

from pkg.config import cfg
from pkg.environ import envs


class Delayer:
    def __init__(self, group, size: int):
        use_gpu = (
            cfg().overlap_off
            or envs.APP_GPU_GATHER.get()
        )
        if use_gpu:
            self.group = group.device_group
            self.dev = group.device
        else:
            self.group = group.cpu_group
            self.dev = "cpu"
        self.buf = torch.empty((size, 4), dtype=torch.int64, device=self.dev)
        ASSERT

    def _gather(self, a: int, b: int):
        local = torch.tensor([a, b, 0, 0], device=self.dev, dtype=torch.int64)
        dist.all_gather_into_tensor(self.buf.flatten(), local, group=self.group)
        return self.buf[:, :]

    def negotiate(self, a: int, b: int):
        info = self._gather(a, b)
        column = info[:, 0]
        if column.min().item() > 0:
            return True
        return int(info[:, 1].max().item()) > 2
"""

LOOP = """
from pkg.delayer import Delayer


def serve(group, requests):
    delayer = Delayer(group, 8)
    while True:
        for a, b in requests:
            delayer.negotiate(a, b)
"""

ASSERT = 'assert not cfg().overlap_off, "needs the overlap schedule"'


def findings(tmp_path, default="False", assertion=ASSERT, extra="", method="__init__"):
    delayer = DELAYER.replace("ASSERT", assertion).replace("__init__", method)
    loop = LOOP if method == "__init__" else LOOP.replace("Delayer(group, 8)", f"Delayer(); delayer.{method}(group, 8)")
    files = {"environ.py": ENVIRON.replace("DEFAULT", default), "config.py": CONFIG,
             "delayer.py": delayer, "loop.py": loop + extra}
    return where(lint_package(tmp_path, files))


def delayer_lines(found) -> set[int]:
    return {line for at, line, _ in found if at == "pkg/delayer.py"}


def test_a_device_field_only_an_off_switch_or_an_asserted_false_value_moves_is_the_host(tmp_path):
    assert delayer_lines(findings(tmp_path)) == set()


def test_without_the_assertion_the_other_part_may_pick_the_gpu(tmp_path):
    assert {25, 32, 34} <= delayer_lines(findings(tmp_path, assertion="pass"))


def test_a_switch_on_by_default_picks_the_gpu(tmp_path):
    assert {25, 32, 34} <= delayer_lines(findings(tmp_path, default="True"))


def test_a_switch_the_tree_turns_on_is_no_default(tmp_path):
    turned_on = "\n\ndef setup():\n    from pkg.environ import envs\n    envs.APP_GPU_GATHER.set(True)\n"
    assert {25, 32, 34} <= delayer_lines(findings(tmp_path, extra=turned_on))


def test_an_assertion_of_another_value_rules_nothing_out(tmp_path):
    found = findings(tmp_path, assertion='assert not cfg().other, "x"')
    assert {25, 32, 34} <= delayer_lines(found)


def test_an_assertion_after_the_arm_outside_the_constructor_rules_nothing_out(tmp_path):
    # the method has bound the field before its assertion fails: the object lives on
    assert {25, 32, 34} <= delayer_lines(findings(tmp_path, method="setup"))


BATCH = """
import torch


class Batch:
    def __init__(self, device: str):
        self.device: str = device

    def positions(self, ids: list):
        return torch.tensor(ids, dtype=torch.long, device=self.device)


def serve(requests):
    batch = Batch("cuda")
    while True:
        for ids in requests:
            batch.positions(ids)
"""


def test_a_device_field_of_a_python_value_is_no_host_device(tmp_path):
    # a device field is a Python value (a str): that says nothing of the device it names
    found = where(lint_package(tmp_path, {"batch.py": BATCH}))
    assert ("pkg/batch.py", 10, "SYN401") in found
