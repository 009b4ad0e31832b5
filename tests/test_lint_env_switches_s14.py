"""Lines under an environment switch the tree declares off by default and never sets
(env_switches.py), read through a function that returns the switch and a field that keeps it:
SGLang's pipeline-parallel speculative relay (`self._pp_spec_relay = (pp_spec_stable_rows_enabled()
and ...)`, `pp_spec_stable_rows_enabled()` returning `envs.SGLANG_ENABLE_PP_SPEC.get()`,
declared `EnvBool(False)`). Each VALID package leaves the relay's sync out of the default report;
each INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

from lint_helpers import env_module

ENVIRON = env_module("PKG_ENABLE_RELAY")

UTILS = """
    from pkg.environ import envs

    def relay_enabled() -> bool:
        \"\"\"Whether the relay runs.\"\"\"
        return envs.PKG_ENABLE_RELAY.get()
"""

RUNNER = """
    import torch
    from pkg.utils import relay_enabled

    class Runner:
        _relay: bool = False

        def __init__(self, size: int):
            self.seq_lens = torch.zeros(size, device="cuda")
            self.init_state(size)

        def init_state(self, size: int):
            self._relay = relay_enabled() and size > 1

        def execute_model(self, batch):
            if self._relay and batch is not None:
                return self.seq_lens.tolist()
            return None
"""


def package(environ=ENVIRON, utils=UTILS, runner=RUNNER, extra=None):
    files = {"environ.py": environ, "utils.py": utils, "runner.py": runner}
    files.update(extra or {})
    return files


def flagged(tmp_path, **changed):
    return lines(lint_package(tmp_path, package(**changed)), "pkg/runner.py")


def cold(tmp_path, **changed):
    run = lint_package(tmp_path, package(**changed), include_cold=True)
    return [f.cold for f in run.findings if f.site.path.endswith("runner.py")]


def test_a_field_kept_from_a_function_returning_an_off_switch_is_off(tmp_path):
    assert flagged(tmp_path) == []
    reasons = cold(tmp_path)
    assert reasons and all("PKG_ENABLE_RELAY" in str(why) and "self._relay" in str(why) for why in reasons)


def test_a_direct_read_and_an_early_return_gate_too(tmp_path):
    runner = RUNNER.replace("""            if self._relay and batch is not None:
                return self.seq_lens.tolist()
            return None""", """            if not envs.PKG_ENABLE_RELAY.get():
                return None
            return self.seq_lens.tolist()""").replace(
        "from pkg.utils import relay_enabled", "from pkg.utils import relay_enabled\n    from pkg.environ import envs")
    assert flagged(tmp_path, runner=runner) == []


def test_a_switch_on_by_default_keeps_the_sync(tmp_path):
    utils = UTILS.replace("PKG_ENABLE_RELAY", "PKG_OTHER")
    assert flagged(tmp_path, utils=utils) == [17]


def test_a_switch_the_tree_sets_keeps_the_sync(tmp_path):
    extra = {"launch.py": """
        from pkg.environ import envs

        def launch():
            envs.PKG_ENABLE_RELAY.set(True)
    """}
    assert flagged(tmp_path, extra=extra) == [17]


def test_a_field_stored_elsewhere_keeps_the_sync(tmp_path):
    extra = {"launch.py": """
        def launch(runner):
            runner._relay = True
    """}
    assert flagged(tmp_path, extra=extra) == [17]


def test_a_sibling_class_storing_the_field_keeps_the_sync(tmp_path):
    runner = RUNNER + """
    class Other:
        def __init__(self):
            self._relay = True
"""
    assert flagged(tmp_path, runner=runner) == [17]


def test_a_field_also_given_something_else_keeps_the_sync(tmp_path):
    runner = RUNNER.replace("""            self.seq_lens = torch.zeros(size, device="cuda")""",
                            """            self.seq_lens = torch.zeros(size, device="cuda")
            self._relay = size > 4""")
    assert flagged(tmp_path, runner=runner) == [18]


def test_a_second_function_of_the_same_name_keeps_the_sync(tmp_path):
    extra = {"other.py": """
        def relay_enabled() -> bool:
            return True
    """}
    assert flagged(tmp_path, extra=extra) == [17]


def test_an_or_keeps_the_sync(tmp_path):
    runner = RUNNER.replace("relay_enabled() and size > 1", "relay_enabled() or size > 1")
    assert flagged(tmp_path, runner=runner) == [17]


ENCODER = """
    import torch

    class Encoder(torch.nn.Module):
        def __init__(self, size: int):
            super().__init__()
            self.use_cls_token = False
            self.size = size

        def forward(self, x: torch.Tensor, class_indices: list):
            if self.use_cls_token:
                keep = torch.ones(x.shape[0], dtype=torch.bool, device=x.device)
                keep[torch.tensor(class_indices, device=x.device)] = False
                x = x[keep]
            return x * 2
"""


def encoder_lines(tmp_path, encoder=ENCODER, extra=None):
    files = {"encoder.py": encoder}
    files.update(extra or {})
    return lines(lint_package(tmp_path, files), "pkg/encoder.py")


def test_a_field_only_ever_set_to_false_turns_its_branch_off(tmp_path):
    assert encoder_lines(tmp_path) == []
    run = lint_package(tmp_path, {"encoder.py": ENCODER}, include_cold=True)
    reasons = [f.cold for f in run.findings if f.site.path.endswith("encoder.py")]
    assert reasons and all("self.use_cls_token" in str(why) and "literal False" in str(why) for why in reasons)


def test_a_field_set_true_elsewhere_keeps_its_branch(tmp_path):
    extra = {"loader.py": """
        def load(encoder):
            encoder.use_cls_token = True
    """}
    assert encoder_lines(tmp_path, extra=extra) != []


def test_a_field_set_true_in_another_method_keeps_its_branch(tmp_path):
    encoder = ENCODER + """
        def enable(self):
            self.use_cls_token = True
"""
    assert encoder_lines(tmp_path, encoder=encoder) != []


def test_a_class_setting_fields_by_computed_name_keeps_its_branch(tmp_path):
    encoder = ENCODER.replace("            self.size = size", """            self.size = size
            for key, value in {"size": size}.items():
                setattr(self, key, value)""")
    assert encoder_lines(tmp_path, encoder=encoder) != []


def test_a_field_unpacked_with_another_keeps_its_branch(tmp_path):
    encoder = ENCODER.replace("            self.size = size", "            self.size, self.use_cls_token = size, size > 2")
    assert encoder_lines(tmp_path, encoder=encoder) != []


def test_an_unrelated_class_storing_a_field_of_that_name_leaves_it_off(tmp_path):
    extra = {"other.py": """
        class Other:
            def __init__(self, use_cls_token=True):
                self.use_cls_token = use_cls_token
    """}
    assert encoder_lines(tmp_path, extra=extra) == []


def test_a_subclass_elsewhere_storing_the_field_keeps_its_branch(tmp_path):
    extra = {"sub.py": """
        from pkg.encoder import Encoder

        class ClsEncoder(Encoder):
            def __init__(self, size: int):
                super().__init__(size)
                self.use_cls_token = True
    """}
    assert encoder_lines(tmp_path, extra=extra) != []


# SGLang 0.5.23's waterfill balancer: `self.use_static_waterfill = not
# envs.SGLANG_DISABLE_STATIC_WATERFILL.get()` (an escape hatch, `EnvBool(False)`), then
# `if self.use_static_waterfill: return <static plan>`; the dynamic plan after it reads its
# rank loads back with `int(...)` / `bool(...)` only where the escape hatch is set (here a
# `.tolist()` and an `.item()` stand for them)
ESCAPE = """
    import torch
    from pkg.environ import envs

    class Balancer:
        def __init__(self, size: int):
            self.counts = torch.zeros(size, device="cuda")
            self.use_static = not envs.PKG_ENABLE_RELAY.get()

        def forward(self, x):
            if self.use_static:
                return x
            return self.counts.tolist()

        def step(self, x):
            if not self.use_static:
                return self.counts.sum().item()
            return 0
"""


def test_a_field_kept_from_the_negation_of_an_off_switch_is_on(tmp_path):
    assert flagged(tmp_path, runner=ESCAPE) == []
    reasons = cold(tmp_path, runner=ESCAPE)
    assert len(reasons) == 2 and all("`self.use_static` is off" in str(why) and "PKG_ENABLE_RELAY" in str(why)
                                     for why in reasons)


def test_the_negation_of_a_switch_on_by_default_keeps_the_syncs(tmp_path):
    assert flagged(tmp_path, runner=ESCAPE.replace("PKG_ENABLE_RELAY", "PKG_OTHER")) == [13, 17]


def test_a_negated_field_stored_anything_else_keeps_the_syncs(tmp_path):
    runner = ESCAPE + """
        def reset(self):
            self.use_static = True
"""
    assert flagged(tmp_path, runner=runner) == [13, 17]


def test_a_field_kept_from_an_off_switch_itself_is_not_read_negated(tmp_path):
    # the field stored the switch itself (`self.use_static = envs.X.get()`): off by default, so
    # `if self.use_static: return` runs its rest by default, and `if not self.use_static:` its body
    runner = ESCAPE.replace("not envs.PKG_ENABLE_RELAY.get()", "envs.PKG_ENABLE_RELAY.get()")
    assert flagged(tmp_path, runner=runner) == [13, 17]
