"""A `keep_on_cpu` field the model refills on the device only in a method that never runs by
default (issue 24 class 4, vLLM's Kimi-VL / Kimi-K2.5 / Idefics3 `select_encoder_cudagraph_items`).
The per-file walk (`classinfo._refilled_on_the_device`) drops such a field as host data for the
whole module before the whole-program pass knows which methods are off (offpaths.py); the file's
second walk keeping it host (refill_variant.py) lets the pass decide. VALID: the module's own
`grid.tolist()` and the tower's leave the default report (cold, saying why); INVALID: a refill
that runs by default keeps both."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_offpaths_s12 import CONFIG, INTERFACES, MANAGER, TOWER
from test_lint_offpaths_s12 import RUNNER as OFFPATHS_RUNNER
from test_lint_scope import lint_package

MANAGER_SELECT = MANAGER.replace("""            return self.model.eager_forward(kw)""",
                                 """            selected = self.model.select_items(kw, [0])
            return self.model.eager_forward(selected)""")

MODEL = """
    import torch
    from pkg.interfaces import SupportsGraph
    from pkg.tower import Tower

    class MultiModalFieldConfig:
        @staticmethod
        def batched(modality, keep_on_cpu=False):
            return (modality, keep_on_cpu)

    class Processor:
        def _get_mm_fields_config(self):
            return dict(x=MultiModalFieldConfig.batched("image"),
                        grid_rows=MultiModalFieldConfig.batched("image", keep_on_cpu=True))

    class Model(torch.nn.Module, SupportsGraph):
        def __init__(self):
            super().__init__()
            self.visual = Tower()

        def embed(self, **kwargs: object):
            grid_rows = kwargs.pop("grid_rows")
            assert isinstance(grid_rows, torch.Tensor)
            sizes = grid_rows.tolist()
            return self.visual(kwargs["x"], grid_rows), sizes

        def select_items(self, kw: dict, indices: list):
            x = kw["x"]
            rows = [kw["grid_rows"][i] for i in indices]
            return {"x": x, "grid_rows": torch.tensor(rows, device=x.device)}

        def eager_forward(self, kw: dict):
            grid_rows = kw["grid_rows"]
            assert isinstance(grid_rows, torch.Tensor)
            return self.visual(kw["x"], grid_rows)
"""

# the runner of test_lint_offpaths_s12, calling the model's `embed(**kwargs)`
RUNNER = OFFPATHS_RUNNER.replace("return self.model.embed(kw)", "return self.model.embed(**kw)")


def package(**changed):
    files = {"config.py": CONFIG, "interfaces.py": INTERFACES, "manager.py": MANAGER_SELECT, "tower.py": TOWER,
             "model.py": MODEL, "runner.py": RUNNER}
    files.update({f"{name}.py": text for name, text in changed.items()})
    return files


def reported(tmp_path, path, **changed):
    return lines(lint_package(tmp_path, package(**changed)), path)


def test_a_refill_only_in_an_opt_in_method_leaves_the_field_host_by_default(tmp_path):
    assert reported(tmp_path, "pkg/model.py") == []


def test_the_tower_fed_the_field_by_default_does_not_sync(tmp_path):
    assert reported(tmp_path, "pkg/tower.py") == []
    (tmp_path / "cold").mkdir()
    run = lint_package(tmp_path / "cold", package(), include_cold=True)
    why = {(f.site.path, f.site.line): f.cold for f in run.findings if f.cold}
    assert "refills on the device only in methods that never run by default (`select_items`)" \
        in why[("pkg/model.py", 24)]
    assert "host data for `grid_thw`" in why[("pkg/tower.py", 6)]


def test_a_refill_in_a_method_that_runs_by_default_keeps_the_syncs(tmp_path):
    # INVALID: the manager is built unconditionally, so the refill runs by default
    runner = RUNNER.replace("""            if not self.compilation_config.graph_encoder:
                return None
""", "")
    assert reported(tmp_path, "pkg/model.py", runner=runner) != []
    assert reported(tmp_path, "pkg/tower.py", runner=runner) != []


def test_without_the_refill_the_field_is_host(tmp_path):
    # the declaration alone makes the field host data in the module (classinfo.keep_on_cpu_fields)
    model = MODEL.replace('torch.tensor(rows, device=x.device)', 'torch.tensor(rows)')
    assert reported(tmp_path, "pkg/model.py", model=model) == []
    assert reported(tmp_path, "pkg/tower.py", model=model) == []


def test_a_second_refill_that_runs_by_default_keeps_the_syncs(tmp_path):
    # INVALID: one refilling method is off, another runs on the default path
    model = MODEL.replace('''            grid_rows = kwargs.pop("grid_rows")
''', '''            grid_rows = self.pad(kwargs)["grid_rows"]
''') + '''
        def pad(self, kw: dict):
            x = kw["x"]
            return {"grid_rows": torch.tensor([1, 2], device=x.device)}
'''
    assert reported(tmp_path, "pkg/model.py", model=model) != []
    assert reported(tmp_path, "pkg/tower.py", model=model) != []
