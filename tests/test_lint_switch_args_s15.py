"""A call WITH arguments of a file's own switch function (env_switches._settled): SGLang's
`_use_online_compress(compress_ratio)`, whose one statement is `return compress_ratio == 128 and
envs.SGLANG_OPT_USE_ONLINE_COMPRESS.get()` (declared `EnvBool(False)`, never set). The `and` is
false whatever the argument is, so the body of `if _use_online_compress(ratio):` never runs by
default. VALID: its sync leaves the default report (cold, with the reason); INVALID twins keep it."""

from __future__ import annotations

from lint_helpers import env_module
from test_lint_guards import lines
from test_lint_scope import lint_package

ENVIRON = env_module("PKG_USE_ONLINE", on=("PKG_ON",))

PLAN = """
    import torch
    from pkg.environ import envs

    def _use_online(ratio: int) -> bool:
        \"\"\"Online path: ratio 128 only.\"\"\"
        return ratio == 128 and envs.PKG_USE_ONLINE.get()

    def build_plan(ratio: int, seq_lens: torch.Tensor):
        if _use_online(ratio):
            return seq_lens.cpu()
        return seq_lens
"""

RUNNER = """
    import torch
    from pkg.plan import build_plan

    class Runner:
        def __init__(self, size: int):
            self.seq_lens = torch.zeros(size, device="cuda")

        def execute_model(self, batch):
            return build_plan(128, self.seq_lens)
"""


def files(plan=PLAN, extra=None):
    found = {"environ.py": ENVIRON, "plan.py": plan, "runner.py": RUNNER}
    found.update(extra or {})
    return found


def flagged(tmp_path, **changed):
    return lines(lint_package(tmp_path, files(**changed)), "pkg/plan.py")


def test_a_call_with_arguments_of_the_files_own_switch_function_is_off(tmp_path):
    assert flagged(tmp_path) == []
    run = lint_package(tmp_path, files(), include_cold=True)
    reasons = [f.cold for f in run.findings if f.site.path.endswith("plan.py")]
    assert reasons and all("_use_online" in str(why) and "PKG_USE_ONLINE" in str(why) for why in reasons)


def test_the_early_return_form_with_arguments_is_off_too(tmp_path):
    plan = PLAN.replace("""        if _use_online(ratio):
            return seq_lens.cpu()
        return seq_lens""", """        if not _use_online(ratio):
            return seq_lens
        return seq_lens.cpu()""")
    assert flagged(tmp_path, plan=plan) == []


def test_invalid_a_switch_on_by_default_keeps_the_sync(tmp_path):
    assert flagged(tmp_path, plan=PLAN.replace("PKG_USE_ONLINE", "PKG_ON")) != []


def test_invalid_an_or_in_the_switch_function_keeps_the_sync(tmp_path):
    plan = PLAN.replace("ratio == 128 and envs", "ratio == 128 or envs")
    assert flagged(tmp_path, plan=plan) != []


def test_invalid_a_function_of_another_file_called_with_arguments_is_not_decided(tmp_path):
    helper = """
    from pkg.environ import envs

    def _use_online(ratio: int) -> bool:
        return ratio == 128 and envs.PKG_USE_ONLINE.get()
"""
    head, _, rest = PLAN.partition("    def _use_online")
    plan = head + "    from pkg.helper import _use_online\n\n" + rest[rest.index("    def build_plan"):]
    assert "from pkg.helper" in plan
    assert flagged(tmp_path, plan=plan, extra={"helper.py": helper}) != []


def test_invalid_another_function_of_that_name_that_is_no_switch(tmp_path):
    other = """
    def _use_online(ratio):
        return ratio > 0
"""
    assert flagged(tmp_path, extra={"other.py": other}) != []


def test_invalid_the_variable_set_somewhere_keeps_the_sync(tmp_path):
    setter = """
    from pkg.environ import envs

    def turn_on():
        envs.PKG_USE_ONLINE.set(True)
"""
    assert flagged(tmp_path, extra={"setter.py": setter}) != []
