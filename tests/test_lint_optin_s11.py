"""Classes built only behind an opt-in switch (optin.py): vLLM's encoder-CUDA-graph manager is
built only where `compilation_config.cudagraph_mm_encoder` is on, a bool field that defaults to
False and that nothing in the tree sets; the syncs its methods reach are not the default
configuration's path. Each VALID package leaves the manager's sync out of the default report;
each INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

CONFIG = """
    from dataclasses import dataclass, field

    @dataclass
    class CompilationConfig:
        cudagraph_mode: int = 1
        graph_encoder: bool = False

    @dataclass
    class Config:
        compilation_config: CompilationConfig = field(default_factory=CompilationConfig)
"""

MANAGER = """
    import torch

    class GraphManager:
        def __init__(self, device):
            self.device = device

        def execute(self, grid: torch.Tensor):
            grid = grid.to(self.device)
            return int(grid.sum().item())
"""

RUNNER = """
    import torch
    from pkg.manager import GraphManager

    class Runner:
        def __init__(self, config):
            self.compilation_config = config.compilation_config
            self.device = torch.device("cuda")
            self.manager = self._create_manager()

        def _create_manager(self):
            if not (self.compilation_config.graph_encoder and self.device is not None):
                return None
            return GraphManager(self.device)

        def execute_model(self, grid: torch.Tensor):
            if self.manager is not None:
                return self.manager.execute(grid)
            return 0
"""


def package(config=CONFIG, runner=RUNNER):
    return {"config.py": config, "manager.py": MANAGER, "runner.py": RUNNER if runner is None else runner}


def flagged(tmp_path, **changed):
    return lines(lint_package(tmp_path, package(**changed)), "pkg/manager.py")


def cold(tmp_path, **changed):
    run = lint_package(tmp_path, package(**changed), include_cold=True)
    return [f.cold for f in run.findings if f.site.path.endswith("manager.py")]


def test_a_class_built_only_behind_an_off_switch_is_not_the_default_path(tmp_path):
    assert flagged(tmp_path) == []
    assert cold(tmp_path) and all("graph_encoder" in str(why) for why in cold(tmp_path))


def test_a_local_test_and_a_conditional_expression_gate_too(tmp_path):
    runner = RUNNER.replace("""            if not (self.compilation_config.graph_encoder and self.device is not None):
                return None
            return GraphManager(self.device)""", """            enable = self.device is not None and self.compilation_config.graph_encoder
            return GraphManager(self.device) if enable else None""")
    assert flagged(tmp_path, runner=runner) == []
    runner = RUNNER.replace("""            if not (self.compilation_config.graph_encoder and self.device is not None):
                return None
            return GraphManager(self.device)""", """            manager = None
            if self.device is not None:
                enable = not self.device.index and self.compilation_config.graph_encoder
                manager = GraphManager(self.device) if enable else None
            return manager""")
    assert flagged(tmp_path, runner=runner) == []


def test_a_user_opt_in_in_a_docstring_is_no_store(tmp_path):
    config = CONFIG.replace("    @dataclass\n    class Config:", '''    @dataclass
    class Config:
        """Enable with `--compilation-config '{"graph_encoder": true}'`."""''', 1)
    assert "true" in config
    assert flagged(tmp_path, config=config) == []


def test_the_manager_built_unconditionally_keeps_the_sync(tmp_path):
    # INVALID: a second construction outside the switch
    runner = RUNNER + """
        def warmup(self):
            return GraphManager(self.device)
"""
    assert flagged(tmp_path, runner=runner) != []


def test_a_switch_on_by_default_or_set_keeps_the_sync(tmp_path):
    # INVALID: the field defaults to True, or some code turns it on, or an override dict names it
    assert flagged(tmp_path, config=CONFIG.replace("graph_encoder: bool = False", "graph_encoder: bool = True")) != []
    config = CONFIG + """
        def __post_init__(self):
            if self.compilation_config.cudagraph_mode > 0:
                self.compilation_config.graph_encoder = True
"""
    assert flagged(tmp_path, config=config) != []
    config = CONFIG + """
    OVERRIDES = {"graph_encoder": True}
"""
    assert flagged(tmp_path, config=config) != []


def test_an_or_test_or_the_off_arm_keeps_the_sync(tmp_path):
    # INVALID: `F or X` may hold with F off; `if F: return None` builds it where F is off
    runner = RUNNER.replace("(self.compilation_config.graph_encoder and self.device is not None)",
                            "(self.compilation_config.graph_encoder or self.device is not None)")
    assert flagged(tmp_path, runner=runner) != []
    runner = RUNNER.replace("if not (self.compilation_config.graph_encoder and self.device is not None):",
                            "if self.compilation_config.graph_encoder:")
    assert flagged(tmp_path, runner=runner) != []
