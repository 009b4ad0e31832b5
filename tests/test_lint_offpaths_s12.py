"""Methods called only from lines that never run by default (offpaths.py): vLLM's models hand their
vision towers a `keep_on_cpu` grid on the default path and a device copy of it only in the
encoder-CUDA-graph helpers, which only a manager built behind an opt-in switch calls. What those
helpers pass does not count against the tower's parameter being host-fed: the tower's sync is not
in the default report, and the helper's own call is still reported, cold. Each VALID package
leaves the tower's line out of the default report; each INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_optin_s11 import CONFIG  # the opt-in switch `graph_encoder`, off by default
from test_lint_scope import lint_package

INTERFACES = """
    from typing import Protocol

    class SupportsGraph(Protocol):
        def eager_forward(self, kw: dict):
            ...
"""

MANAGER = """
    from pkg.interfaces import SupportsGraph

    class GraphManager:
        def __init__(self, model: SupportsGraph):
            self.model = model

        def execute(self, kw: dict):
            return self.model.eager_forward(kw)
"""

TOWER = """
    import torch

    class Tower(torch.nn.Module):
        def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
            sizes = grid_thw.prod(-1).tolist()
            return x.split(sizes)
"""

MODEL = """
    import torch
    from pkg.interfaces import SupportsGraph
    from pkg.tower import Tower

    class Model(torch.nn.Module, SupportsGraph):
        def __init__(self):
            super().__init__()
            self.visual = Tower()

        def embed(self, kw: dict):
            grid = torch.tensor(kw["rows"])
            return self.visual(kw["x"], grid)

        def eager_forward(self, kw: dict):
            grid = torch.tensor(kw["rows"]).to("cuda", non_blocking=True)
            return self._run(kw, grid)

        def _run(self, kw: dict, grid: torch.Tensor):
            return self.visual(kw["x"], grid)
"""

RUNNER = """
    import torch
    from pkg.manager import GraphManager

    class Runner:
        def __init__(self, config, model):
            self.compilation_config = config.compilation_config
            self.model = model
            self.manager = self._create_manager()

        def _create_manager(self):
            if not self.compilation_config.graph_encoder:
                return None
            return GraphManager(self.model)

        def execute_model(self, kw: dict):
            if self.manager is not None:
                return self.manager.execute(kw)
            return self.model.embed(kw)
"""


def package(**changed):
    files = {"config.py": CONFIG, "interfaces.py": INTERFACES, "manager.py": MANAGER, "tower.py": TOWER,
             "model.py": MODEL, "runner.py": RUNNER}
    files.update({f"{name}.py": text for name, text in changed.items()})
    return files


def tower(tmp_path, **changed):
    return lines(lint_package(tmp_path, package(**changed)), "pkg/tower.py")


def cold_tower(tmp_path, **changed):
    run = lint_package(tmp_path, package(**changed), include_cold=True)
    return {f.site.line: f.cold for f in run.findings if f.cold and f.site.path == "pkg/tower.py"}


def test_a_device_grid_passed_only_from_opt_in_code_does_not_make_the_tower_sync(tmp_path):
    assert tower(tmp_path) == []
    # the sync stays in the cold report, saying where the device data comes from
    why = cold_tower(tmp_path)[6]
    assert "host data for `grid_thw`" in why and "`Model._run`" in why


def test_a_call_by_name_on_a_receiver_of_unknown_class_counts_too(tmp_path):
    manager = MANAGER.replace("model: SupportsGraph", "model")
    assert tower(tmp_path, manager=manager) == []


def test_a_manager_built_by_default_keeps_the_sync(tmp_path):
    # INVALID: the manager is built unconditionally, so the helper runs by default
    runner = RUNNER.replace("""            if not self.compilation_config.graph_encoder:
                return None
""", "")
    assert tower(tmp_path, runner=runner) != []


def test_a_helper_also_called_from_code_that_runs_keeps_the_sync(tmp_path):
    # INVALID: a per-step method calls the opt-in helper too, directly or through a reference
    runner = RUNNER.replace("return self.model.embed(kw)", "return self.model.eager_forward(kw)")
    assert tower(tmp_path, runner=runner) != []
    model = MODEL.replace("""            grid = torch.tensor(kw["rows"])
            return self.visual(kw["x"], grid)""", """            run = self.eager_forward
            return run(kw)""")
    assert tower(tmp_path, model=model) != []


def test_a_device_grid_on_the_default_path_keeps_the_sync(tmp_path):
    # INVALID: the per-step caller itself copies the grid to the device
    model = MODEL.replace("""            grid = torch.tensor(kw["rows"])
            return self.visual""", """            grid = torch.tensor(kw["rows"]).to("cuda", non_blocking=True)
            return self.visual""")
    assert tower(tmp_path, model=model) != []


def test_a_helper_nothing_calls_is_not_off(tmp_path):
    # INVALID: an uncalled method may be an entry point the tree does not show
    manager = MANAGER.replace("return self.model.eager_forward(kw)", "return None")
    assert tower(tmp_path, manager=manager) != []


def test_a_method_called_only_on_another_platform_is_off_too(tmp_path):
    # VALID: the device grid comes only from a method called under a test false on CUDA
    model = MODEL.replace("""        def embed(self, kw: dict):
            grid = torch.tensor(kw["rows"])""", """        def embed(self, kw: dict):
            if is_hip():
                return self.eager_forward(kw)
            grid = torch.tensor(kw["rows"])""").replace("import torch\n", "import torch\n    from pkg.platforms import is_hip\n", 1)
    manager = MANAGER.replace("return self.model.eager_forward(kw)", "return None")
    platforms = """
    def is_hip() -> bool:
        return False
"""
    assert tower(tmp_path, model=model, manager=manager, platforms=platforms) == []
    # INVALID twin: the same call on a line that runs on CUDA
    model = model.replace("if is_hip():", "if kw.get('eager'):")
    assert tower(tmp_path, model=model, manager=manager, platforms=platforms) != []
