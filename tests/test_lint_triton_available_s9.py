"""Issue 24, session 9: a test that Triton is available is true on a CUDA GPU
(syncscope/lint/capability_tests.py `available_test`, library facts `available-on-cuda`), so the torch
fallback a serving stack takes without Triton is no per-step path there. VALID packages are not
reported by default (their finding is cold, the reason naming the test); INVALID twins stay."""

from __future__ import annotations

from test_lint_scope import lint_package, where
from test_lint_scope_once import cold_reasons

# SGLang's shape: an in-tree predicate taking the attention backend, called in another module
UTILS = """
    from pkg.platforms import current_platform

    def support_triton(backend: str) -> bool:
        return current_platform.capabilities.supports_triton and backend not in ["torch_native"]
"""

PLATFORMS = """
    class _Caps:
        supports_triton = True

    class _Platform:
        capabilities = _Caps()

    current_platform = _Platform()
"""

POSITIONS = """
    import torch
    from pkg.utils import support_triton

    def compute_position(backend, prefix_lens: torch.Tensor, seq_lens: torch.Tensor):
        if support_triton(backend):
            return compute_position_triton(prefix_lens, seq_lens)
        else:
            return compute_position_torch(prefix_lens, seq_lens)

    def compute_position_triton(prefix_lens, seq_lens):
        return prefix_lens + seq_lens

    def compute_position_torch(prefix_lens, seq_lens):
        return torch.cat([torch.arange(p.item(), p.item() + s.item()) for p, s in zip(prefix_lens, seq_lens)])

    class Runner(torch.nn.Module):
        def forward(self, x: torch.Tensor, backend: str):
            prefix = x.cuda()
            return compute_position(backend, prefix, prefix)
"""


EXPECTED = [9, 15, 15, 20]  # the fallback call, its two `.item()` syncs, the copy they read


def _files(positions: str) -> dict[str, str]:
    return {"platforms.py": PLATFORMS, "utils.py": UTILS, "positions.py": positions}


def test_the_fallback_taken_without_triton_is_cold(tmp_path):
    assert where(lint_package(tmp_path, _files(POSITIONS))) == []
    reasons = cold_reasons(lint_package(tmp_path, _files(POSITIONS), include_cold=True))
    # the call of the fallback is cold for the test; the fallback's own lines, reached from no
    # per-step root any more, are cold too
    assert "support_triton" in reasons[("pkg/positions.py", 9)], reasons


def test_a_backend_choice_named_triton_is_no_availability_test(tmp_path):
    # INVALID: `backend.is_triton()` picks a kernel, both branches run on CUDA
    other = POSITIONS.replace("support_triton(backend)", "backend.is_triton()")
    assert [line for _, line, _ in where(lint_package(tmp_path, _files(other)))] == EXPECTED


def test_another_package_or_an_unknown_predicate_decides_nothing(tmp_path):
    # INVALID: `has_triton_kernels` is another package; `support_fast(backend)` says nothing
    for name in ("has_triton_kernels", "support_fast"):
        utils = UTILS.replace("support_triton", name)
        other = POSITIONS.replace("support_triton", name)
        files = {"platforms.py": PLATFORMS, "utils.py": utils, "positions.py": other}
        assert [line for _, line, _ in where(lint_package(tmp_path, files))] == EXPECTED, name


# vLLM's shape: a module flag imported from the Triton helper module
TRITON_UTILS = """
    import importlib.util

    HAS_TRITON = importlib.util.find_spec("triton") is not None
"""

SAMPLER = """
    import torch
    from pkg.triton_utils import HAS_TRITON

    class Sampler(torch.nn.Module):
        def forward(self, logits: torch.Tensor, k: torch.Tensor):
            if not HAS_TRITON:
                return logits[: int(k.max().item())]
            return logits
"""


def test_a_flag_that_triton_is_there_makes_its_fallback_cold(tmp_path):
    files = {"triton_utils.py": TRITON_UTILS, "sampler.py": SAMPLER}
    assert where(lint_package(tmp_path, files)) == []
    for name in ("has_triton()", "is_triton_available()", "TRITON_AVAILABLE"):
        other = SAMPLER.replace("HAS_TRITON", name.rstrip("()"), 1).replace("HAS_TRITON", name)
        utils = TRITON_UTILS.replace("HAS_TRITON", name.rstrip("()"))
        assert where(lint_package(tmp_path, {"triton_utils.py": utils, "sampler.py": other})) == [], name


def test_a_flag_naming_no_toolchain_decides_nothing(tmp_path):
    # INVALID: `HAS_FAST_TOPK` may be false on CUDA: its fallback stays per step
    other = SAMPLER.replace("HAS_TRITON", "HAS_FAST_TOPK")
    utils = TRITON_UTILS.replace("HAS_TRITON", "HAS_FAST_TOPK")
    assert [line for _, line, _ in where(lint_package(tmp_path, {"triton_utils.py": utils, "sampler.py": other}))] == [8]
