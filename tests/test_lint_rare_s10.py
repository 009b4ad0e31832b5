"""Rare and once code, session 10 (branch r-rare5): aborting a request is a rare event
(library facts `rare-event-words`: SGLang's beam coordinator `_abort_group`), and set-up a
function keeps on a module it is handed runs once per module (memo_params.py: SGLang's
`ensure_cutedsl_wrapper(layer: torch.nn.Module)`). Small packages: the per-step code in one
file, the helper that syncs in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where

HELPERS = """
    import torch

    def pointer_table(pointers, device) -> torch.Tensor:
        table = torch.tensor(pointers, dtype=torch.int64, device=device)
        top = int(table.max().item())
        return table[: top + 1]
"""

ABORT = """
    import torch
    from pkg.helpers import pointer_table

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.groups = {}

        def forward(self, x: torch.Tensor, reqs):
            for req in reqs:
                if req.to_abort:
                    pointer_table([req.slot], x.device)
                if req.done:
                    self._abort_group(req)
            return x

        def _abort_group(self, req):
            return pointer_table([req.slot], req.device)
"""

ENSURE = """
    import torch
    from pkg.helpers import pointer_table

    def ensure_wrapper(layer: torch.nn.Module) -> None:
        if layer._wrapper is not None:
            return
        scales = pointer_table([0, 1], layer.device)
        layer._wrapper = scales

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self._wrapper = None

        def forward(self, x: torch.Tensor):
            ensure_wrapper(self)
            return x + self._wrapper
"""


def _syncs(run) -> list:
    return [item for item in where(run) if item[0] in ("pkg/model.py", "pkg/helpers.py")]


def test_an_abort_path_is_rare(tmp_path):
    # VALID: `if req.to_abort:` is false in an ordinary step, and a function named for an
    # abort (`_abort_group`) runs only on one
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": ABORT})
    assert _syncs(run) == [], where(run)


def test_a_finish_path_stays_per_step(tmp_path):
    # INVALID twin: finishing a request is no rare event (every request finishes)
    source = ABORT.replace("req.to_abort", "req.to_finish").replace("_abort_group", "_finish_group")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert len(_syncs(run)) >= 2, where(run)


def test_a_lazy_wrapper_on_a_module_parameter_runs_once(tmp_path):
    # VALID: `layer: torch.nn.Module` lives across steps; after the first call it returns early
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": ENSURE})
    assert _syncs(run) == [], where(run)


def test_a_lazy_field_on_an_undeclared_parameter_stays_per_step(tmp_path):
    # INVALID twin: `layer` is not declared a module: it may be a per-step object
    source = ENSURE.replace("layer: torch.nn.Module", "layer")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)


def test_a_field_never_stored_stays_per_step(tmp_path):
    # INVALID twin: the rest stores another field, so the test holds on every call
    source = ENSURE.replace("layer._wrapper = scales", "layer._other = scales")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)


def test_a_field_also_keyed_on_a_size_stays_per_step(tmp_path):
    # INVALID twin: `and n == layer._n` may fail every step
    source = ENSURE.replace("def ensure_wrapper(layer: torch.nn.Module) -> None:",
                            "def ensure_wrapper(layer: torch.nn.Module, n: int = 1) -> None:") \
        .replace("if layer._wrapper is not None:", "if layer._wrapper is not None and n == layer._n:")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)
