"""A field filled with a field of a call's result holds the class declared there (call_fields.py).

SGLang 0.5.23's model runner fills `self.prefill_cuda_graph_runner = capture.runner`, with
`capture = capture_prefill_graph(...)` annotated `-> GraphCapture` and `GraphCapture.runner:
Optional[BaseRunner]`, then calls `self.prefill_cuda_graph_runner.execute(forward_batch,
**kwargs)` every step. With the field untyped, the call went by name to every `execute` its
import closure meets, the diffusion package's pipeline executors among them, and the LLM step
reached the diffusion offload managers' syncs (eight default findings). VALID: the field is typed
through the call's return annotation and the declared field, so the call reaches the declared
class's family only (its `execute` is abstract: stubs.py), and the executor's sync is cold.
INVALID twins, where the call still reaches the executor: no return annotation, the local bound
twice, the field declared with no class (`Any`), a read through a parameter (no call), and the
executor itself in the declared class's family. (The tree stores a `runner` of no known class
elsewhere, as SGLang does: the field's name alone, attr_classes.py, limits nothing.)
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

RUNNERS = """
from abc import ABC, abstractmethod

import torch


class BaseRunner(ABC):
    @abstractmethod
    def execute(self, batch: torch.Tensor, **kwargs): ...


class GraphRunner(BaseRunner):
    def execute(self, batch: torch.Tensor, **kwargs):
        return batch * 2
"""

SETUP = """
from dataclasses import dataclass
from typing import Any, Optional

from pkg.runners import BaseRunner, GraphRunner


@dataclass
class GraphCapture:
    runner: {declared}


def capture_graph(model_runner){returns}:
    return GraphCapture(runner=GraphRunner())


def other_capture(model_runner){returns}:
    return GraphCapture(runner=None)
"""

EXECUTOR = """
import torch

from pkg.runners import BaseRunner


class Executor{bases}:
    def execute(self, batch: torch.Tensor, **kwargs):
        return int(batch.sum().item())

    def attach(self, runner):
        self.runner = runner  # a store of no known class: the name `runner` says nothing
"""

MODEL_RUNNER = """
import torch

from pkg.executor import Executor
from pkg.setup import capture_graph, other_capture


class ModelRunner:
    def init_graph(self, again: bool{param}):
        capture = capture_graph(model_runner=self)
{rebind}        self.graph_runner = {read}

    def forward_batch_generation(self, batch: torch.Tensor, **kwargs):
        return self.graph_runner.execute(batch, **kwargs)
"""

SYNC = ("pkg/executor.py", 9, "SYN201")


def package(declared="Optional[BaseRunner]", returns=" -> GraphCapture", bases="", rebind="", read="capture.runner",
            param=""):
    return {"runners.py": RUNNERS, "setup.py": SETUP.format(declared=declared, returns=returns),
            "executor.py": EXECUTOR.format(bases=bases),
            "model_runner.py": MODEL_RUNNER.format(rebind=rebind, read=read, param=param)}


def test_a_field_read_off_an_annotated_call_holds_the_declared_class(tmp_path):
    run = lint_package(tmp_path, package(), include_cold=True)
    found = [f for f in run.findings if (f.site.path, f.site.line, f.code) == SYNC]
    assert found and all(f.cold for f in found)  # the step runs a `BaseRunner`'s `execute` only


def test_without_a_return_annotation_the_call_still_goes_by_name(tmp_path):
    assert SYNC in where(lint_package(tmp_path, package(returns="")))


def test_a_local_bound_twice_types_nothing(tmp_path):
    rebind = "        if again:\n            capture = other_capture(model_runner=self)\n"
    assert SYNC in where(lint_package(tmp_path, package(rebind=rebind)))


def test_a_field_declared_with_no_class_types_nothing(tmp_path):
    assert SYNC in where(lint_package(tmp_path, package(declared="Any")))


def test_a_field_read_off_a_parameter_types_nothing(tmp_path):
    assert SYNC in where(lint_package(tmp_path, package(read="given.runner", param=", given=None")))


def test_the_declared_family_still_reaches_its_own_overrides(tmp_path):
    assert SYNC in where(lint_package(tmp_path, package(bases="(BaseRunner)")))
