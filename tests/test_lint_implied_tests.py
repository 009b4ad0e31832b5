"""A test that the test around it decides on CUDA is decided too (implied_tests.py).

SGLang 0.5.23's `causal_conv1d_fn` (layers/attention/mamba/causal_conv1d.py) sets
`_HAS_CONV1D_KERNEL = is_cuda()` at module level, then `use_triton = not _HAS_CONV1D_KERNEL or
(x.stride(-1) != 1 and "seq_lens_cpu" in kwargs)`, and under `if use_triton:` computes the
sequence lengths on the host (`.cpu().tolist()`) only `if "seq_lens_cpu" not in kwargs:`. On
CUDA `use_triton` holds only where `"seq_lens_cpu" in kwargs` does, so that `.cpu()` runs only on
ROCm/MUSA: readers judged its 12 findings (the LFM2 models' calls) `never on CUDA`.
VALID: the inner block is cold, and neither the sync nor the call site reaching it is reported by
default; also with the flag tested directly (`if not _HAS_KERNEL or ...:`). INVALID twins: the
flag is not a platform test, a statement comes between the flag's binding and its test, the
inner `if` is not the first statement of the body (the body may change what was tested), or the
outer test holds without the inner test's negation.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

CONV = """
import torch

_HAS_KERNEL = {flag}


def _lens_cpu(loc: torch.Tensor):
    return (loc[1:] - loc[:-1]).cpu().tolist()


class Conv(torch.nn.Module):
    def forward(self, x: torch.Tensor, loc: torch.Tensor, **kwargs):
        use_triton = not _HAS_KERNEL or (x.stride(-1) != 1 and {needs})
{between}        if use_triton:
{first}            if "seq_lens_cpu" not in kwargs:
                kwargs["seq_lens_cpu"] = _lens_cpu(loc)
            return x
        return x + 1
"""

SYNC = ("pkg/conv.py", 8, "SYN203")


def lint(tmp_path, flag="torch.cuda.is_available()", needs='"seq_lens_cpu" in kwargs', between="", first=""):
    source = CONV.format(flag=flag, needs=needs, between=between, first=first)
    return where(lint_package(tmp_path, {"conv.py": source}))


def test_a_fallback_the_platform_flag_leaves_to_other_platforms_is_cold(tmp_path):
    assert lint(tmp_path) == []


def test_the_flag_tested_directly_decides_the_inner_test_too(tmp_path):
    source = CONV.format(flag="torch.cuda.is_available()", needs='"seq_lens_cpu" in kwargs', between="", first="")
    source = source.replace("        if use_triton:\n", '        if not _HAS_KERNEL or (x.stride(-1) != 1 and "seq_lens_cpu" in kwargs):\n')
    assert where(lint_package(tmp_path, {"conv.py": source})) == []


def test_a_flag_that_is_no_platform_test_decides_nothing(tmp_path):
    assert SYNC in lint(tmp_path, flag="torch.backends.cudnn.enabled")


def test_a_statement_between_the_binding_and_the_test_keeps_it(tmp_path):
    assert SYNC in lint(tmp_path, between='        kwargs.pop("seq_lens_cpu", None)\n')


def test_an_inner_test_after_another_statement_keeps_it(tmp_path):
    assert SYNC in lint(tmp_path, first='            kwargs.pop("seq_lens_cpu", None)\n')


def test_an_outer_test_that_does_not_imply_the_inner_one_keeps_it(tmp_path):
    assert SYNC in lint(tmp_path, needs='"other" in kwargs')
