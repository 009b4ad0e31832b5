"""A value None only where a configuration test is false (confignone.py): a callee syncs only
`if counts is None and config.parallel.dp_size > 1:`, and the caller passes a count that is None
only where `dp_size` is not above 1 (vLLM's `set_forward_context` and the `num_tokens_across_dp`
its per-step callers pass). Each VALID package leaves the caller's call out of the default
report (cold, with its reason); each INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

CONTEXT = """
    import torch
    from pkg.sync import coordinate

    def set_context(meta, config, num_tokens: int, counts=None):
        if counts is None and config.parallel.dp_size > 1:
            _, counts = coordinate(num_tokens, config.parallel)
        return counts
"""

SYNC = """
    import torch

    def _post(t: torch.Tensor) -> torch.Tensor:
        return t.cpu()

    def _sync(n: int, parallel):
        t = torch.zeros(4, device="cuda")
        mode = int(t.min().item())
        return mode, _post(t)

    def coordinate(n: int, parallel):
        if parallel.dp_size == 1:
            return False, None
        if n < 0:
            return True, torch.full((parallel.dp_size,), n)
        mode, counts = _sync(n, parallel)
        return mode, counts
"""

RUNNER = """
    import torch
    from pkg.context import set_context
    from pkg.sync import coordinate

    class Runner:
        def _pad(self, n: int):
            counts = None
            if self.config.parallel.dp_size > 1:
                _, counts = coordinate(n, self.config.parallel)
            return n, counts

        def forward(self, x: torch.Tensor):
            n, counts = self._pad(x.shape[0])
            return set_context(None, self.config, n, counts=counts)

        def warm_up(self, n: int):
            return set_context(None, self.config, n)  # leaves the count out: the branch stays
"""

CALL_LINE = 15  # `set_context(...)` in RUNNER
PAD_LINE = 10  # `coordinate(...)` in `_pad`, a real sync when dp_size > 1


def package(**changed):
    files = {"context.py": CONTEXT, "sync.py": SYNC, "runner.py": RUNNER}
    files.update({f"{name}.py": text for name, text in changed.items()})
    return files


def test_a_count_none_only_on_one_rank_rules_out_the_branch(tmp_path):
    run = lint_package(tmp_path, package())
    assert CALL_LINE not in lines(run, "pkg/runner.py")
    assert PAD_LINE in lines(run, "pkg/runner.py")  # the caller's own coordination stays
    cold = lint_package(tmp_path, {}, include_cold=True)
    reasons = {f.site.line: f.cold for f in cold.findings if f.site.path == "pkg/runner.py" and f.cold}
    assert "is None only where `parallel.dp_size` is not > 1" in reasons[CALL_LINE]


def test_a_keyword_none_store_before_an_if_on_the_same_setting(tmp_path):
    # `should, counts = False, None` then `if ... > 1:` storing it again: None only on one rank
    runner = RUNNER.replace("            counts = None\n", "            flag, counts = False, None\n")
    run = lint_package(tmp_path, package(runner=runner))
    assert CALL_LINE not in lines(run, "pkg/runner.py")


def test_the_branch_stays_when_the_store_is_not_under_the_test(tmp_path):
    runner = RUNNER.replace("            if self.config.parallel.dp_size > 1:\n                _, counts",
                            "            if n > 1:\n                _, counts")
    run = lint_package(tmp_path, package(runner=runner))
    assert CALL_LINE in lines(run, "pkg/runner.py")


def test_the_branch_stays_when_a_helper_returns_none_on_another_setting(tmp_path):
    sync = SYNC.replace("if n < 0:\n            return True, torch.full((parallel.dp_size,), n)",
                        "if parallel.tp_size > 1:\n            return True, None")
    run = lint_package(tmp_path, package(sync=sync))
    assert CALL_LINE in lines(run, "pkg/runner.py")


def test_the_branch_stays_when_a_helper_may_return_none_unannotated(tmp_path):
    sync = SYNC.replace("def _post(t: torch.Tensor) -> torch.Tensor:", "def _post(t: torch.Tensor):")
    run = lint_package(tmp_path, package(sync=sync))
    assert CALL_LINE in lines(run, "pkg/runner.py")


def test_the_branch_stays_for_a_literal_none(tmp_path):
    runner = RUNNER.replace("counts=counts)", "counts=None)")
    run = lint_package(tmp_path, package(runner=runner))
    assert CALL_LINE in lines(run, "pkg/runner.py")


def test_the_branch_stays_when_the_test_is_on_the_same_side(tmp_path):
    # None where dp_size >= 2 is None where the callee's test holds
    runner = RUNNER.replace("if self.config.parallel.dp_size > 1:", "if self.config.parallel.dp_size < 2:")
    run = lint_package(tmp_path, package(runner=runner))
    assert CALL_LINE in lines(run, "pkg/runner.py")
