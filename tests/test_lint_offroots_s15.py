"""A method a wildcard root name makes a root (`forward_*`) is no root when it is off by default
(offpaths.py): the tree calls it, and every call is on a line that never runs by default. SGLang's
Qwen-VL towers have a `forward_with_cuda_graph` that only an opt-in switch calls; as a root by its
name it put its syncs in the default report although nothing runs it. Each VALID package leaves
the helper's sync out of the default report (it stays cold); each INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

PLATFORMS = """
    def is_hip() -> bool:
        return False
"""

MODEL = """
    import torch
    from pkg.platforms import is_hip

    class Vision(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            if is_hip():
                return self.forward_with_graph(x)
            return x * 2

        def forward_with_graph(self, x: torch.Tensor):
            n = int(x.sum().item())
            return x[:n]
"""



def sync_line(model: str) -> int:
    return next(n for n, text in enumerate(model.splitlines(), 1) if ".item()" in text)


def flagged(tmp_path, model=MODEL, **options) -> bool:
    """Whether the report (the default one, or with `include_cold`) flags the helper's sync."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    run = lint_package(tmp_path, {"platforms.py": PLATFORMS, "model.py": model}, **options)
    return sync_line(model) in lines(run, "pkg/model.py")


def test_a_wildcard_root_called_only_off_by_default_is_no_root(tmp_path):
    assert not flagged(tmp_path)
    assert flagged(tmp_path / "cold", include_cold=True)  # still in the cold report


def test_a_wildcard_root_called_on_a_line_that_runs_stays_a_root(tmp_path):
    # INVALID: a Python flag of the caller's own may be on
    model = MODEL.replace("def forward(self, x: torch.Tensor):", "def forward(self, x: torch.Tensor, graph: bool):") \
        .replace("if is_hip():", "if graph:")
    assert flagged(tmp_path, model)


def test_a_wildcard_root_nothing_calls_stays_a_root(tmp_path):
    # INVALID: the framework may call it; the tree shows no call that could say otherwise
    model = MODEL.replace("""            if is_hip():
                return self.forward_with_graph(x)
""", "")
    assert flagged(tmp_path, model)


DISPATCHED = """
    import torch

    class Op(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return getattr(self, "forward_" + self.platform)(x)

        def forward_cuda(self, x: torch.Tensor):
            raise NotImplementedError

        def forward_hip(self, x: torch.Tensor):
            return self.forward_cuda(x)

    class Indexer(Op):
        def forward_cuda(self, x: torch.Tensor):
            n = int(x.sum().item())
            return x[:n]
"""


def test_an_override_stays_a_root_though_its_only_call_is_off(tmp_path):
    # INVALID: the tree calls `forward_cuda` only from ROCm's fallback, but the base class picks
    # it by a computed name on CUDA
    assert flagged(tmp_path, DISPATCHED)
