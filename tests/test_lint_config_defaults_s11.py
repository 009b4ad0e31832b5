"""Switches a configuration's `__post_init__` settles, and the host device such a switch picks
(config_defaults.py): vLLM's data-parallel exchange all-reduces its tensor on the CPU (Gloo) when
`disable_nccl_for_dp_synchronization`, a field declared None that `VllmConfig.__post_init__` sets
from `async_scheduling`, itself settled True unless an exception (a pooling model, an executor)
holds. Each VALID package leaves the sync on the exchanged tensor out of the report; each INVALID
twin keeps it."""

from __future__ import annotations

import ast
import textwrap

from syncscope.lint import config_defaults as C
from test_lint_guards import lines
from test_lint_scope import lint_package

CONFIG = """
    from dataclasses import dataclass, field

    @dataclass
    class SchedulerConfig:
        async_scheduling: bool | None = None

    @dataclass
    class ParallelConfig:
        data_parallel_size: int = 1
        disable_nccl_for_dp_synchronization: bool | None = None

    @dataclass
    class Config:
        runner: str = "generate"
        scheduler_config: SchedulerConfig = field(default_factory=SchedulerConfig)
        parallel_config: ParallelConfig = field(default_factory=ParallelConfig)

        def __post_init__(self):
            supported = self.runner != "ray"
            if self.scheduler_config.async_scheduling:
                pass
            elif self.scheduler_config.async_scheduling is None:
                if self.runner == "pooling":
                    self.scheduler_config.async_scheduling = False
                elif not supported:
                    self.scheduler_config.async_scheduling = False
                else:
                    self.scheduler_config.async_scheduling = True
            if self.parallel_config.disable_nccl_for_dp_synchronization is None:
                if self.scheduler_config.async_scheduling:
                    self.parallel_config.disable_nccl_for_dp_synchronization = True
                else:
                    self.parallel_config.disable_nccl_for_dp_synchronization = False
"""

EXCHANGE = """
    import torch
    import torch.distributed as dist
    from pkg.config import ParallelConfig

    def _device_and_group(parallel_config: ParallelConfig):
        device = get_group().device
        group = get_group().device_group
        if parallel_config.disable_nccl_for_dp_synchronization:
            device = "cpu"
            group = get_group().cpu_group
        return device, group

    def _run_ar(n: int, parallel_config: ParallelConfig) -> torch.Tensor:
        device, group = _device_and_group(parallel_config)
        tensor_cpu = torch.zeros(4, 2, dtype=torch.int32)
        tensor_cpu[0][0] = n
        tensor = tensor_cpu.to(device, non_blocking=True)
        dist.all_reduce(tensor, group=group)
        return tensor

    def _mode(tensor: torch.Tensor) -> int:
        return int(tensor[3, :].min().item())

    def coordinate(n: int, parallel_config: ParallelConfig):
        if parallel_config.data_parallel_size == 1:
            return 0
        tensor = _run_ar(n, parallel_config)
        return _mode(tensor)

    class Runner:
        def execute_model(self, n):
            return coordinate(n, self.parallel_config)
"""


def package(config=CONFIG, exchange=EXCHANGE):
    return {"config.py": config, "exchange.py": exchange}


def flagged(tmp_path, **changed):
    return lines(lint_package(tmp_path, package(**changed)), "pkg/exchange.py")


def test_a_device_a_default_on_switch_picks_is_the_host(tmp_path):
    assert flagged(tmp_path) == []


def test_a_switch_a_parameter_default_turns_off_keeps_the_sync(tmp_path):
    # INVALID: `async_scheduling` settles False when nothing else holds: NCCL, a device tensor
    config = CONFIG.replace("""                else:
                    self.scheduler_config.async_scheduling = True""", """                else:
                    self.scheduler_config.async_scheduling = False""")
    assert flagged(tmp_path, config=config) != []


def test_the_switch_off_arm_keeps_the_sync(tmp_path):
    # INVALID: the host's device only where the switch is off (`if not ...:`)
    exchange = EXCHANGE.replace("if parallel_config.disable_nccl", "if not parallel_config.disable_nccl")
    assert flagged(tmp_path, exchange=exchange) != []


def test_a_switch_set_again_outside_its_settlement_decides_nothing(tmp_path):
    # INVALID: another store of the switch in `__post_init__` (not a literal settlement)
    config = CONFIG + """
            if self.parallel_config.data_parallel_size > 4:
                self.parallel_config.disable_nccl_for_dp_synchronization = False
    """
    assert flagged(tmp_path, config=config) != []


def test_a_test_on_an_unsettled_switch_decides_nothing(tmp_path):
    # INVALID: the settlement reads a field no `__post_init__` settles (its default is not read)
    config = CONFIG.replace("""                if self.scheduler_config.async_scheduling:
                    self.parallel_config""", """                if self.scheduler_config.overlap:
                    self.parallel_config""")
    assert flagged(tmp_path, config=config) != []


def test_a_device_bound_again_after_the_switch_keeps_the_sync(tmp_path):
    # INVALID: the GPU's device bound after the switch's arm (or in an `else`)
    exchange = EXCHANGE.replace("""        return device, group
""", """        if group is None:
            device = torch.device("cuda")
        return device, group
""")
    assert flagged(tmp_path, exchange=exchange) != []
    exchange = EXCHANGE.replace("""            group = get_group().cpu_group
""", """            group = get_group().cpu_group
        else:
            device = get_group().device
""")
    assert flagged(tmp_path, exchange=exchange) != []


def test_a_switch_of_another_owner_decides_nothing(tmp_path):
    # INVALID: keyed by the owner's name too: `draft_config.F` is not `parallel_config.F`
    exchange = EXCHANGE.replace("if parallel_config.disable_nccl", "if draft_config.disable_nccl")
    assert flagged(tmp_path, exchange=exchange) != []


def _functions(source: str) -> dict:
    tree = ast.parse(textwrap.dedent(source))
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            facts = {"returns": [], "tuple_returns": []}
            returns = [n for n in ast.walk(node) if isinstance(n, ast.Return)]
            facts["returns"] = returns
            facts["tuple_returns"] = [r for r in returns if isinstance(r.value, ast.Tuple)]
            C.note(facts, node)
            out[node.name] = facts
    return out


def test_settled_defaults_read_exceptions_and_other_switches():
    functions = _functions(CONFIG)
    assert C.switch_defaults(functions) == {"scheduler_config.async_scheduling": True,
                                            "parallel_config.disable_nccl_for_dp_synchronization": True}
    # a settlement to a value that is no literal decides nothing, nor does one that differs
    other = _functions(CONFIG.replace("async_scheduling = True", "async_scheduling = supported"))
    assert "scheduler_config.async_scheduling" not in C.switch_defaults(other)
    assert C.host_device_elements(dict(functions, **_functions(EXCHANGE))) == {"_device_and_group": frozenset({0})}
