"""Session 14 (`v-misc6`): a class built only in the methods of a class no CUDA process holds.

platform_built.held_only_by: a method runs only on an object of its class, so a class every
construction of which lies in a method of a class that only another platform's code builds
(or on a line that never runs on CUDA) is not held on CUDA either; its methods are not entered
by a call by name. vLLM's `TopKWeightAndReduceNaiveBatched`, built only in
`BatchedPrepareAndFinalize.finalize`, a class built only under `current_platform.is_xpu()`.
Each VALID package leaves the line out of the default report; each INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

PLATFORMS = """
    class Platform:
        def is_xpu(self) -> bool:
            return False

    current_platform = Platform()
"""

REDUCE = """
    import torch

    class NaiveReduce:
        def apply(self, out: torch.Tensor, ids: torch.Tensor):
            hits = (ids == 1).nonzero()
            return out[hits]

    class PlainReduce:
        def apply(self, out: torch.Tensor, ids: torch.Tensor):
            return out
"""

NONZERO_LINE = 6  # `(ids == 1).nonzero()` in NaiveReduce.apply

PREPARE = """
    import torch
    from pkg.reduce import NaiveReduce

    class BatchedPF:
        def finalize(self, out: torch.Tensor, ids: torch.Tensor, impl):
            if impl is None:
                impl = NaiveReduce()
            return impl.apply(out, ids)
{extra}
"""

UTILS = """
    from pkg.platforms import current_platform
    from pkg.prepare import BatchedPF
    from pkg.reduce import PlainReduce

    def make_pf(backend: str):
        if current_platform.is_xpu() and backend == "batched":
            return BatchedPF()
        return None

    def make_reduce():
        return PlainReduce()
{extra}
"""

HOLDER = """
    import torch

    from pkg.utils import make_pf, make_reduce

    class Model(torch.nn.Module):
        def __init__(self, pf):
            super().__init__()
            self.pf = pf
            self.reduce = make_reduce()

        def forward(self, x: torch.Tensor, ids: torch.Tensor):
            return self.reduce.apply(x, ids)
"""


def package(prepare="", utils=""):
    return {"platforms.py": PLATFORMS, "reduce.py": REDUCE, "prepare.py": PREPARE.format(extra=prepare),
            "utils.py": UTILS.format(extra=utils), "model.py": HOLDER}


def test_a_class_built_only_in_a_method_of_a_class_held_elsewhere_is_never_entered(tmp_path):
    run = lint_package(tmp_path, package())
    assert NONZERO_LINE not in lines(run, "pkg/reduce.py")


def test_a_chain_of_two_such_classes_is_followed(tmp_path):
    # NaiveReduce now built only by Helper, itself built only by BatchedPF
    chain = PREPARE.replace("impl = NaiveReduce()", "impl = Helper().reduce").format(
        extra="\n    class Helper:\n        def __init__(self):\n            self.reduce = NaiveReduce()\n")
    files = package()
    files["prepare.py"] = chain
    run = lint_package(tmp_path, files)
    assert NONZERO_LINE not in lines(run, "pkg/reduce.py")


def test_invalid_a_construction_in_a_function_of_its_own_keeps_it(tmp_path):
    run = lint_package(tmp_path, package(utils="\n    def other():\n        return NaiveReduce()\n"
                                         "\n    from pkg.reduce import NaiveReduce\n"))
    assert NONZERO_LINE in lines(run, "pkg/reduce.py")


def test_invalid_a_construction_at_the_class_level_runs_at_import(tmp_path):
    run = lint_package(tmp_path, package(prepare="\n    class Other:\n        DEFAULT = NaiveReduce()\n"))
    assert NONZERO_LINE in lines(run, "pkg/reduce.py")


def test_invalid_a_class_level_construction_of_the_held_class_itself_keeps_it(tmp_path):
    files = package()
    files["prepare.py"] = files["prepare.py"].replace(
        "class BatchedPF:\n", "class BatchedPF:\n        SHARED = NaiveReduce()\n\n")
    run = lint_package(tmp_path, files)
    assert NONZERO_LINE in lines(run, "pkg/reduce.py")


def test_invalid_the_builder_held_on_cuda_keeps_it(tmp_path):
    files = package()
    files["utils.py"] = files["utils.py"].replace("return None", "return BatchedPF()")
    run = lint_package(tmp_path, files)
    assert NONZERO_LINE in lines(run, "pkg/reduce.py")


def test_invalid_a_registry_entry_keeps_it(tmp_path):
    run = lint_package(tmp_path, package(prepare='\n    REGISTRY = {"naive": NaiveReduce}\n'))
    assert NONZERO_LINE in lines(run, "pkg/reduce.py")
