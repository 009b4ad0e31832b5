"""Guards, fourth pass (issue 24, class 5): a fallback that runs only when a kernel bound at import
is None (modulenames.py). SGLang's DFlash verify renormalizes with `top_k_renorm_prob`, which
`kernels/ops/sampling/renorm.py` binds to a kernel under `if is_cuda():` and to None on other
platforms; `_dflash_top_k_renorm_prob` returns the kernel's result `if top_k_renorm_prob is not
None:` and only otherwise reads `top_ks.max().item()`. Each VALID package is left out of the
default report (cold, with its reason); each INVALID twin is still reported."""

from __future__ import annotations

from test_lint_guards import cold_reasons, lines
from test_lint_scope import lint_package

# the platform's pick, in its own module
KERNELS = """
    from pkg.utils import is_cuda, is_npu
    from pkg.lazy import LazyImport

    if is_cuda():
        renorm = LazyImport("flashinfer.sampling", "top_k_renorm_probs")
    elif is_npu():
        try:
            from npu_kernels import renorm
        except ImportError:
            renorm = None
    else:
        renorm = None
"""

UTILS = """
    def is_cuda():
        return True

    def is_npu():
        return False
"""

LAZY = """
    class LazyImport:
        def __init__(self, module, name):
            self.module, self.name = module, name
"""

OPS = """
    import torch
    from pkg.kernels import renorm

    def top_k(probs: torch.Tensor, top_ks: torch.Tensor):
        if renorm is not None:
            return renorm(probs, top_ks)
        k = int(top_ks.max().item())
        return torch.topk(probs, k)
"""

MODEL = """
    import torch
    from pkg.ops import top_k

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor, ks: torch.Tensor):
            return top_k(x, ks)
"""

MODEL_LINE = 7  # the call of `top_k` in MODEL


def package(**changed):
    files = {"kernels.py": KERNELS, "utils.py": UTILS, "lazy.py": LAZY, "ops.py": OPS, "model.py": MODEL}
    files.update({f"{name}.py": text for name, text in changed.items()})
    return files


def test_a_fallback_for_a_kernel_bound_on_cuda_is_cold(tmp_path):
    run = lint_package(tmp_path, package())
    assert lines(run) == []
    assert lines(run, "pkg/model.py") == []
    assert "is bound on CUDA" in cold_reasons(tmp_path)[8]


def test_the_fallback_stays_when_cuda_binds_none(tmp_path):
    kernels = KERNELS.replace('renorm = LazyImport("flashinfer.sampling", "top_k_renorm_probs")', "renorm = None")
    run = lint_package(tmp_path, package(kernels=kernels))
    assert lines(run) == [8]
    assert lines(run, "pkg/model.py") == [MODEL_LINE]


def test_the_fallback_stays_when_the_binding_is_a_call_of_a_function(tmp_path):
    # `load_kernel(...)` may return None; only a class's constructor is known not to
    lazy = LAZY.replace("class LazyImport:\n        def __init__(self, module, name):\n"
                        "            self.module, self.name = module, name",
                        "def LazyImport(module, name):\n        return None")
    run = lint_package(tmp_path, package(lazy=lazy))
    assert lines(run) == [8]


def test_the_fallback_stays_when_the_platform_test_is_unknown(tmp_path):
    kernels = KERNELS.replace("if is_cuda():", "if has_kernels():").replace(
        "from pkg.utils import is_cuda, is_npu", "from pkg.utils import has_kernels, is_npu")
    utils = UTILS + "\n    def has_kernels():\n        return False\n"
    run = lint_package(tmp_path, package(kernels=kernels, utils=utils))
    assert lines(run) == [8]


# the same module's name, picked by an import in a `try` (its `except` is an error path)
SAME_MODULE = """
    import torch
    try:
        from fast_kernels import renorm
    except ImportError:
        renorm = None

    def top_k(probs: torch.Tensor, top_ks: torch.Tensor):
        if renorm is None:
            k = int(top_ks.max().item())
            return torch.topk(probs, k)
        return renorm(probs, top_ks)
"""


def test_a_fallback_for_an_installed_kernel_in_the_same_module_is_cold(tmp_path):
    run = lint_package(tmp_path, package(ops=SAME_MODULE))
    assert lines(run) == []
    assert lines(run, "pkg/model.py") == []


def test_a_name_the_function_rebinds_is_no_module_name(tmp_path):
    ops = SAME_MODULE.replace("        if renorm is None:", "        renorm = pick(probs)\n        if renorm is None:")
    ops = ops.replace("def top_k(", "def pick(p):\n        return None\n\n    def top_k(")
    run = lint_package(tmp_path, package(ops=ops))
    assert lines(run) != []


def test_a_name_a_function_assigns_globally_stays_unknown(tmp_path):
    ops = SAME_MODULE + """
    def disable():
        global renorm
        renorm = None
"""
    run = lint_package(tmp_path, package(ops=ops))
    assert lines(run) == [10]


def test_a_fallback_for_a_module_defined_function_is_cold(tmp_path):
    # `def f` at the top of the tree's own module: a function object, never None
    ops = OPS.replace("from pkg.kernels import renorm", "from pkg.lazy import renorm")
    lazy = LAZY + "\n    def renorm(p, k):\n        return p\n"
    run = lint_package(tmp_path, package(ops=ops, lazy=lazy))
    assert lines(run) == []


# -- a None-guard on a method every call by name passes (callguards._dispatched_given) -------
# SGLang's `ScheduleBatch.filter_batch` calls `self.spec_info.filter_batch(new_indices=...,
# new_indices_cpu=keep)`: the receiver's class is unknown, so the call reaches every
# `filter_batch` it can bind to, and those calls were not counted among the method's callers
RELAY = """
    import torch

    class Relay:
        def filter_batch(self, new_indices: torch.Tensor, new_indices_cpu: list[int] | None = None):
            keep = new_indices_cpu if new_indices_cpu is not None else new_indices.tolist()
            self.rows = [self.rows[i] for i in keep]
"""

BATCH = """
    import torch, pkg.relay as relay  # the class its spec info may be (importclosure.py)

    class Batch:
        def __init__(self, spec_info):
            self.spec_info = spec_info

        def step(self, keep: list[int]):
            keep_device = torch.tensor(keep, pin_memory=True).to("cuda", non_blocking=True)
            self.spec_info.filter_batch(new_indices=keep_device, new_indices_cpu=keep)
"""


def test_a_fallback_every_call_by_name_rules_out_is_cold(tmp_path):
    run = lint_package(tmp_path, {"relay.py": RELAY, "batch.py": BATCH})
    assert lines(run, "pkg/relay.py") == []
    assert "every caller passes it" in cold_reasons(tmp_path, "pkg/relay.py")[6]


def test_a_fallback_a_call_by_name_leaves_to_its_default_stays(tmp_path):
    batch = BATCH + """
        def other(self, keep_device: torch.Tensor):
            self.spec_info.filter_batch(keep_device)
"""
    run = lint_package(tmp_path, {"relay.py": RELAY, "batch.py": batch})
    assert lines(run, "pkg/relay.py") == [6]


def test_a_call_by_name_with_star_args_leaves_the_parameter_out(tmp_path):
    batch = BATCH + """
        def other(self, *args):
            self.spec_info.filter_batch(*args)
"""
    run = lint_package(tmp_path, {"relay.py": RELAY, "batch.py": batch})
    assert lines(run, "pkg/relay.py") == [6]
