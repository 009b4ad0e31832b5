"""Virtual dispatch (overrides.py): a call on a receiver typed as a base class whose method is a
stub reaches the subclasses' overrides, and only theirs."""

from __future__ import annotations

from test_lint_scope import lint_package, where

BASE = """
    import abc

    class Backend(abc.ABC):
        def prepare(self, batch):
            \"\"\"Per-step metadata. Default: nothing.\"\"\"

        @abc.abstractmethod
        def plan(self, batch):
            ...

        def describe(self, batch):
            return batch.shape
"""

IMPLS = """
    import torch
    from pkg.base import Backend

    class FlashBackend(Backend):
        def prepare(self, batch: torch.Tensor):
            return batch.nonzero()

        def plan(self, batch: torch.Tensor):
            return batch.tolist()

        def describe(self, batch: torch.Tensor):
            return batch.cpu()

    class Unrelated:
        def prepare(self, batch: torch.Tensor):
            return batch.nonzero()
"""


def _runner(call: str) -> str:
    return f"""
        from pkg.base import Backend

        class Runner:
            def __init__(self, backend: Backend):
                self.backend: Backend = backend

            def _backend(self) -> Backend:
                return self.backend

            def execute_model(self, batch, backend: Backend):
                {call}
    """


def test_a_base_annotated_receiver_reaches_the_override_of_a_stub(tmp_path):
    run = lint_package(tmp_path, {"base.py": BASE, "impls.py": IMPLS,
                                  "runner.py": _runner("backend.prepare(batch)")})
    assert any(p == "pkg/impls.py" and line == 7 for p, line, _ in where(run)), where(run)
    # the unrelated class with the same method name is not reached: its `prepare` is cold
    assert not any(p == "pkg/impls.py" and line == 17 for p, line, _ in where(run))


def test_the_chain_names_the_override(tmp_path):
    run = lint_package(tmp_path, {"base.py": BASE, "impls.py": IMPLS,
                                  "runner.py": _runner("backend.plan(batch)")})
    found = [f for f in run.findings if f.site.path == "pkg/impls.py" and f.site.line == 10]
    assert found, where(run)
    assert [step[0] for step in found[0].per_step] == ["pkg.runner.Runner.execute_model",
                                                       "pkg.impls.FlashBackend.plan"]


def test_a_field_typed_as_the_base_dispatches_too(tmp_path):
    run = lint_package(tmp_path, {"base.py": BASE, "impls.py": IMPLS,
                                  "runner.py": _runner("self.backend.plan(batch)")})
    assert any(p == "pkg/impls.py" and line == 10 for p, line, _ in where(run))


def test_a_base_method_with_a_body_is_not_widened(tmp_path):
    # `describe` does work in the base: the call runs the base's (or an override the pass cannot
    # tell apart); only stubs fan out, so FlashBackend.describe stays out of the report
    run = lint_package(tmp_path, {"base.py": BASE, "impls.py": IMPLS,
                                  "runner.py": _runner("backend.describe(batch)")})
    assert not any(p == "pkg/impls.py" for p, _, _ in where(run)), where(run)


def test_super_and_calls_through_the_class_are_not_widened(tmp_path):
    # `super().prepare` in Middle runs Backend's stub, never Leaf's override; `Backend.plan(self,
    # ...)` names the stub itself, never FlashBackend's
    sub = """
        import torch
        from pkg.base import Backend

        class Middle(Backend):
            def execute_model(self, batch):
                super().prepare(batch)
                Backend.plan(self, batch)

        class Leaf(Middle):
            def prepare(self, batch: torch.Tensor):
                return batch.nonzero()
    """
    run = lint_package(tmp_path, {"base.py": BASE, "impls.py": IMPLS, "middle.py": sub})
    assert not any(p in ("pkg/impls.py", "pkg/middle.py") for p, _, _ in where(run)), where(run)
