"""A string only compared names no import (imports.loaded_strings).

The import closure (importclosure.py) counts a string literal naming a module of the tree as an
import of it: a registry's `("pkg.models.beam", "Model")` that `importlib` loads. SGLang 0.5.23's
NPU start-up tests `if "sglang.multimodal_gen" not in sys.modules:`, and that test, read as an
import, made every module of the LLM engine that imports the NPU utilities know the whole
diffusion package: its model runner's `self.prefill_cuda_graph_runner.execute(...)` went by name
to the diffusion pipeline executors' `execute`. A string that is an operand of a comparison
(`==`, `!=`, `in`, `not in`) is tested, never loaded. VALID: the runner's module only compares
the diffusion module's name, so a call by name does not reach the diffusion class. INVALID twins:
the same string also passed to `importlib.import_module`, or compared inside a tuple (`name in
("pkg.diffusion",)`: not an operand itself, still counted).
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

DIFFUSION = """
import torch


class Executor:
    def execute(self, batch: torch.Tensor):
        return int(batch.sum().item())
"""

CLI = """
from pkg.diffusion import Executor


def main():
    return Executor()
"""

RUNNER = """
import importlib
import sys

import torch


def setup(name: str):
    if {test}:
        return None
{load}    return name


class ModelRunner:
    def __init__(self, worker):
        self.worker = worker

    def forward_batch_generation(self, batch: torch.Tensor):
        return self.worker.execute(batch)
"""

SYNC = ("pkg/diffusion.py", 7, "SYN201")


def package(test='"pkg.diffusion" not in sys.modules', load=""):
    return {"diffusion.py": DIFFUSION, "cli.py": CLI, "runner.py": RUNNER.format(test=test, load=load)}


def test_a_module_name_tested_against_sys_modules_is_no_import(tmp_path):
    run = lint_package(tmp_path, package(), include_cold=True)
    found = [f for f in run.findings if (f.site.path, f.site.line, f.code) == SYNC]
    assert found and all(f.cold for f in found)


def test_a_module_name_compared_with_equals_is_no_import(tmp_path):
    run = lint_package(tmp_path, package(test='name == "pkg.diffusion"'), include_cold=True)
    found = [f for f in run.findings if (f.site.path, f.site.line, f.code) == SYNC]
    assert found and all(f.cold for f in found)


def test_the_same_name_also_loaded_by_importlib_is_an_import(tmp_path):
    load = '    importlib.import_module("pkg.diffusion")\n'
    assert SYNC in where(lint_package(tmp_path, package(load=load)))


def test_a_name_inside_a_compared_tuple_is_still_counted(tmp_path):
    assert SYNC in where(lint_package(tmp_path, package(test='name in ("pkg.diffusion",)')))
