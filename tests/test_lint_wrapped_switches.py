"""Opt-in switches declared with a wrapped type, and read through a getter (optin.py).

SGLang 0.5.23 declares its server arguments as annotated fields of namespace classes, over
several lines and through an alias of `typing.Annotated`:

    class Disagg(msgspec.Struct):
        disaggregation_enable_kv_checksum: A[
            bool,
            "Compute an Adler-32 checksum ... Disabled by default.",
        ] = False

and reads them through a getter, `if get_disagg().disaggregation_enable_kv_checksum:`, before it
builds the `KvChecksumComputer` whose `compute` reads the checksum back with `.item()`. optin.py
knew only `F: bool = False` and `<path>.F`, so the class counted as built by default and its
sync as per step. VALID: the annotated form (alias, several lines), `Optional[bool] = False`,
and a plain declaration read as `get_disagg().F`: the class is built only behind an off switch,
its sync is not in the default report. INVALID twins: the switch defaults to True, the tree
turns it on, or the class is also built outside the switch: the sync stays.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

ARGS = """
from typing import Annotated, Optional

A = Annotated


class Disagg:
    enable_checksum: {decl}


_ARGS = Disagg()


def get_disagg():
    return _ARGS
{extra}"""

CHECKSUM = """
import torch


class Checksum:
    def __init__(self, device):
        self.device = device

    def compute(self, pages: torch.Tensor) -> int:
        return int(pages.sum().item())
"""

SCHEDULER = """
import torch

from pkg.args import get_disagg
from pkg.checksum import Checksum


class Scheduler:
    def __init__(self):
        {build}

    def run_batch(self, pages: torch.Tensor):
        computer = self.checksum
        if computer is not None:
            computer.compute(pages)
        return pages
"""

ANNOTATED = 'A[\n        bool,\n        "Checksum the KV pages. Disabled by default.",\n    ] = False'
GATED = 'self.checksum = Checksum("cuda") if get_disagg().enable_checksum else None'
SYNC = ("pkg/checksum.py", 10, "SYN201")


def _run(tmp_path, decl: str = ANNOTATED, build: str = GATED, extra: str = ""):
    return where(lint_package(tmp_path, {
        "args.py": ARGS.format(decl=decl, extra=extra),
        "checksum.py": CHECKSUM,
        "scheduler.py": SCHEDULER.format(build=build),
    }))


# -- VALID: built only behind a switch that is off by default --------------------------------
def test_annotated_alias_over_several_lines(tmp_path):
    assert SYNC not in _run(tmp_path)


def test_annotated_through_a_local_bound_once(tmp_path):
    build = ('on = get_disagg().enable_checksum\n        self.checksum = None\n'
             '        if on:\n            self.checksum = Checksum("cuda")')
    assert SYNC not in _run(tmp_path, build=build)


def test_optional_bool(tmp_path):
    assert SYNC not in _run(tmp_path, decl="Optional[bool] = False")


def test_plain_bool_read_through_a_getter(tmp_path):
    assert SYNC not in _run(tmp_path, decl="bool = False")


# -- INVALID twins: the switch may be on, or the class is built without it --------------------
def test_annotated_default_true_stays(tmp_path):
    assert SYNC in _run(tmp_path, decl=ANNOTATED.replace("= False", "= True"))


def test_annotated_turned_on_in_the_tree_stays(tmp_path):
    extra = "\n\ndef enable_all(args):\n    args.enable_checksum = True\n"
    assert SYNC in _run(tmp_path, extra=extra)


def test_wrapped_type_other_than_bool_stays(tmp_path):
    assert SYNC in _run(tmp_path, decl='A[\n        int,\n        "How many pages.",\n    ] = False')


def test_built_outside_the_switch_too_stays(tmp_path):
    build = GATED + '\n        self.fallback = Checksum("cuda")'
    assert SYNC in _run(tmp_path, build=build)
