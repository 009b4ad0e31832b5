"""A flag every call passes a switch off by default (switch_args.py, read by flagguards.py):
vLLM's expert-load statistics `.tolist()` runs only when `log_stats` is on, and every caller
passes `log_stats=<config>.eplb_config.log_balancedness`, a bool field that defaults to False and
that nothing in the tree sets. Each VALID package leaves the statistics' sync out of the default
report (cold, naming the switch); each INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

CONFIG = """
    from dataclasses import dataclass, field

    @dataclass
    class BalanceConfig:
        window: int = 8
        log_balance: bool = False

    @dataclass
    class ParallelConfig:
        balance_config: BalanceConfig = field(default_factory=BalanceConfig)
"""

STATE = """
    import torch

    class BalanceState:
        def __init__(self, device):
            self.load = torch.zeros(8, device=device)
            self.steps = 0

        def step(self, is_dummy: bool = False, log_stats: bool = False) -> None:
            if log_stats and self.steps % 2 == 0:
                stats = torch.stack([self.load.mean(), self.load.max()]).tolist()
                print(stats)
            self.steps += 1
"""

RUNNER = """
    import torch
    from pkg.state import BalanceState

    class Runner:
        def __init__(self, parallel_config):
            self.parallel_config = parallel_config
            self.state: BalanceState = BalanceState(torch.device("cuda"))

        def balance_step(self, is_dummy: bool = False) -> None:
            self.state.step(is_dummy, log_stats=self.parallel_config.balance_config.log_balance)

        def execute_model(self, x: torch.Tensor):
            y = x * 2
            self.balance_step()
            return y
"""

CONTROLLER = """
    import torch
    from pkg.state import BalanceState

    class Controller:
        def __init__(self, parallel_config):
            self.parallel_config = parallel_config
            self.state: BalanceState = BalanceState(torch.device("cuda"))

        def step(self, is_dummy: bool = False) -> None:
            log_stats = self.parallel_config.balance_config.log_balance
            self.state.step(is_dummy, log_stats=log_stats)

        def forward(self, x: torch.Tensor):
            self.step()
            return x
"""


def package(config=CONFIG, runner=RUNNER, controller=CONTROLLER):
    return {"config.py": config, "state.py": STATE, "runner.py": runner, "controller.py": controller}


def flagged(tmp_path, **changed):
    return lines(lint_package(tmp_path, package(**changed)), "pkg/state.py")


def cold(tmp_path, **changed):
    run = lint_package(tmp_path, package(**changed), include_cold=True)
    return [str(f.cold) for f in run.findings if f.site.path.endswith("state.py")]


def test_a_flag_every_call_passes_an_off_switch_is_off_by_default(tmp_path):
    assert flagged(tmp_path) == []
    assert cold(tmp_path) and all("log_balance" in why for why in cold(tmp_path))


def test_a_switch_passed_by_place_or_through_an_and_is_off_too(tmp_path):
    runner = RUNNER.replace("self.state.step(is_dummy, log_stats=self.parallel_config.balance_config.log_balance)",
                            "self.state.step(is_dummy, self.parallel_config.balance_config.log_balance and not is_dummy)")
    assert flagged(tmp_path, runner=runner) == []


def test_a_switch_something_sets_keeps_the_sync(tmp_path):
    runner = RUNNER.replace("            self.parallel_config = parallel_config\n",
                            "            self.parallel_config = parallel_config\n"
                            "            parallel_config.balance_config.log_balance = True\n")
    assert flagged(tmp_path, runner=runner) != []


def test_a_switch_on_by_default_keeps_the_sync(tmp_path):
    assert flagged(tmp_path, config=CONFIG.replace("log_balance: bool = False", "log_balance: bool = True")) != []


def test_a_local_bound_twice_or_a_parameter_keeps_the_sync(tmp_path):
    twice = CONTROLLER.replace("            self.state.step(is_dummy, log_stats=log_stats)",
                               "            if is_dummy:\n                log_stats = True\n"
                               "            self.state.step(is_dummy, log_stats=log_stats)")
    assert flagged(tmp_path, controller=twice) != []
    param = CONTROLLER.replace("def step(self, is_dummy: bool = False) -> None:",
                               "def step(self, is_dummy: bool = False, log_stats=True) -> None:").replace(
        "            log_stats = self.parallel_config.balance_config.log_balance\n",
        "            if is_dummy:\n                log_stats = self.parallel_config.balance_config.log_balance\n")
    assert flagged(tmp_path, controller=param) != []


def test_an_or_or_a_negated_switch_keeps_the_sync(tmp_path):
    for value in ("self.parallel_config.balance_config.log_balance or is_dummy",
                  "not self.parallel_config.balance_config.log_balance"):
        runner = RUNNER.replace("log_stats=self.parallel_config.balance_config.log_balance", f"log_stats={value}")
        assert flagged(tmp_path, runner=runner) != [], value


def test_one_call_passing_another_value_keeps_the_sync(tmp_path):
    runner = RUNNER.replace("            self.balance_step()\n",
                            "            self.balance_step()\n            self.state.step(False, log_stats=x.numel() > 4)\n")
    assert flagged(tmp_path, runner=runner) != []


def test_a_switch_passed_to_a_flag_the_caller_passes_on_is_off_too(tmp_path):
    runner = RUNNER.replace(
        "def balance_step(self, is_dummy: bool = False) -> None:",
        "def balance_step(self, is_dummy: bool = False, log: bool = False) -> None:").replace(
        "log_stats=self.parallel_config.balance_config.log_balance)", "log_stats=log)").replace(
        "            self.balance_step()\n",
        "            self.balance_step(log=self.parallel_config.balance_config.log_balance)\n")
    assert flagged(tmp_path, runner=runner) == []
    assert cold(tmp_path, runner=runner) and all("log_balance" in why for why in cold(tmp_path, runner=runner))
    on = runner.replace("self.balance_step(log=self.parallel_config.balance_config.log_balance)",
                        "self.balance_step(log=True)")
    assert flagged(tmp_path, runner=on) != []
