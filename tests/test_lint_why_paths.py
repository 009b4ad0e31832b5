"""Which path a finding's `per_step` names when several per-step roots reach its function at the
same depth (reachability.PerStep.walk): a resolved call before a call by name, then the caller
nearest in the program. SGLang's LLM attention backends were explained through the diffusion
attention's `self.attn_impl.forward(...)`, a call by name whose root sorts first, though the
LLM's own attention layer reaches them as well. The findings are the same either way."""

from __future__ import annotations

from test_lint_scope import lint_package

BACKEND = """
    import torch

    class Backend:
        def attend(self, q: torch.Tensor, k=None):
            return int(q.sum().item())
"""

# a diffusion attention in another part of the program, whose root sorts first: its
# implementation is a parameter of unknown class, so `attend` goes by name (it imports the
# backend's module, so the two parts meet in the imports: importclosure.py)
DIFFUSION = """
    import torch
    from pkg.llm.backend import Backend

    class LocalAttention(torch.nn.Module):
        def __init__(self, impl):
            super().__init__()
            self.impl = impl

        def forward(self, q: torch.Tensor):
            return self.impl.attend(q, k=None)
"""

LAYER_RESOLVED = """
    import torch
    from pkg.llm.backend import Backend

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.backend = Backend()

        def forward(self, q: torch.Tensor):
            return self.backend.attend(q)
"""

LAYER_BY_NAME = """
    import torch
    from pkg.llm.backend import Backend

    class Attention(torch.nn.Module):
        def __init__(self, backend):
            super().__init__()
            self.backend = backend

        def forward(self, q: torch.Tensor):
            return self.backend.attend(q, k=None)
"""


def _root_of_sync(tmp_path, files: dict) -> str:
    run = lint_package(tmp_path, files)
    found = [f for f in run.findings if f.site.path == "pkg/llm/backend.py"]
    assert [f.code for f in found] == ["SYN201"], [(f.site.path, f.code) for f in run.findings]
    return found[0].per_step[0][0]


def test_a_resolved_call_explains_what_a_call_by_name_also_reaches(tmp_path):
    # VALID: the LLM layer's `self.backend = Backend()` resolves its call; the diffusion root's
    # call by name, sorting first, is not the path given
    files = {"aaa/diffusion.py": DIFFUSION, "llm/backend.py": BACKEND, "llm/layer.py": LAYER_RESOLVED}
    assert _root_of_sync(tmp_path, files) == "pkg.llm.layer.Attention.forward"


def test_of_two_calls_by_name_the_nearer_caller_explains(tmp_path):
    # VALID: both calls go by name; the caller in the backend's own package is the nearer
    files = {"aaa/diffusion.py": DIFFUSION, "llm/backend.py": BACKEND, "llm/layer.py": LAYER_BY_NAME}
    assert _root_of_sync(tmp_path, files) == "pkg.llm.layer.Attention.forward"


def test_a_call_by_name_alone_still_reaches(tmp_path):
    # INVALID for the preference: with no other caller, the call by name is the path, and the
    # sync stays per step
    files = {"aaa/diffusion.py": DIFFUSION, "llm/backend.py": BACKEND}
    assert _root_of_sync(tmp_path, files) == "pkg.aaa.diffusion.LocalAttention.forward"
