"""The callers of a sync the default path never makes (issue 24 class 4, vLLM's Idefics3
`embed_multimodal` -> `_process_image_input` -> `num_patches.tolist()`, Kimi-VL, Kimi-K2.5).
A `keep_on_cpu` field refilled on the device only in a method off by default is host data on the
default path (refill_variant.py, session 12): its reads are kept cold. The summaries the pass
made before it knew which methods are off still said the helper syncs on its parameter, so the
call passing the dict that carries the field was flagged (SYN601) though all it reaches is that
host read. VALID: the call leaves the report; INVALID: a refill that runs by default, or a
second sync on a device field of the same dict, keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_refill_offpath_s12 import MODEL, package
from test_lint_scope import lint_package

# the field is read in a helper from the dict the parser builds (Idefics3's shape)
HELPER = MODEL.replace('''            grid_rows = kwargs.pop("grid_rows")
            assert isinstance(grid_rows, torch.Tensor)
            sizes = grid_rows.tolist()
            return self.visual(kwargs["x"], grid_rows), sizes
''', '''            image_input = self._parse(**kwargs)
            return self._process(image_input)

        def _parse(self, **kwargs: object):
            x = kwargs.pop("x")
            grid_rows = kwargs.pop("grid_rows")
            return ImageInputs(x=x, grid_rows=grid_rows)

        def _process(self, image_input: ImageInputs):
            feats = self.visual.proj(image_input["x"])
            grid_rows = image_input["grid_rows"]
            return feats.split(grid_rows.tolist())
''')
HELPER = HELPER.replace("""    class Model(""", """    class ImageInputs(TypedDict):
        x: torch.Tensor
        grid_rows: torch.Tensor

    class Model(""").replace("""    import torch
""", """    from typing import TypedDict

    import torch
""", 1)
assert HELPER != MODEL


def reported(tmp_path, path, **changed):
    return lines(lint_package(tmp_path, package(**changed)), path)


def test_the_call_reaching_only_a_host_read_by_default_is_no_sync(tmp_path):
    assert reported(tmp_path, "pkg/model.py", model=HELPER) == []
    # the read itself stays in the cold report, saying why; the call is gone
    (tmp_path / "cold").mkdir()
    run = lint_package(tmp_path / "cold", package(model=HELPER), include_cold=True)
    found = {f.site.line: (f.code, f.cold) for f in run.findings if f.site.path == "pkg/model.py"}
    assert found[39][0] == "SYN202" and "never run by default (`select_items`)" in found[39][1]
    assert 29 not in found


def test_a_refill_that_runs_by_default_keeps_the_call(tmp_path):
    # INVALID: the parser refills the field on the device itself
    model = HELPER.replace('''            return ImageInputs(x=x, grid_rows=grid_rows)''',
                           '''            return ImageInputs(x=x, grid_rows=torch.tensor([1, 2], device=x.device))''')
    assert model != HELPER
    assert 29 in reported(tmp_path, "pkg/model.py", model=model)


def test_another_sync_on_the_same_dict_keeps_the_call(tmp_path):
    # INVALID: the helper also syncs on a field that is device data on every path
    model = HELPER.replace('''            return feats.split(grid_rows.tolist())''',
                           '''            n = image_input["x"].sum().item()
            return feats.split(grid_rows.tolist()), n''')
    assert model != HELPER
    assert 29 in reported(tmp_path, "pkg/model.py", model=model)


# -- a submodule call in an inherited method reaches the subclass's tower (subclass_towers.py) --
# vLLM's GLM-5-Next reuses GLM-4.1V's `_process_image_input` (`self.visual(pixel_values,
# grid_thw=grid_thw)`, a `keep_on_cpu` grid) with its own tower in `self.visual`

from test_lint_offpaths_s12 import package as tower_package  # noqa: E402

NEXT = """
    import torch
    from pkg.model import Model

    class NextTower(torch.nn.Module):
        def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
            sizes = grid_thw.prod(-1).tolist()
            return x.split(sizes)

    class NextModel(Model):
        def __init__(self):
            super().__init__()
            self.visual = NextTower()
"""


def next_tower(tmp_path, next_text=NEXT, **changed):
    return lines(lint_package(tmp_path, tower_package(next=next_text, **changed)), "pkg/next.py")


def test_the_inherited_call_feeds_the_subclass_tower(tmp_path):
    # the base's `embed` passes a host grid; only its opt-in `eager_forward` passes a device one
    assert next_tower(tmp_path) == []
    (tmp_path / "cold").mkdir()
    run = lint_package(tmp_path / "cold", tower_package(next=NEXT), include_cold=True)
    why = {f.site.line: f.cold for f in run.findings if f.site.path == "pkg/next.py"}
    assert "host data for `grid_thw`" in why[7]


def test_a_subclass_overriding_the_method_is_fed_by_its_own_call(tmp_path):
    # INVALID: the subclass's own `embed` hands its tower a device grid on the default path
    text = NEXT + """
        def embed(self, kw: dict):
            return self.visual(kw["x"], kw["grid"].cuda())
"""
    assert next_tower(tmp_path, text) == [7]


def test_a_device_grid_from_the_inherited_method_keeps_the_sync(tmp_path):
    # INVALID: the inherited method itself passes device data by default
    from test_lint_offpaths_s12 import MODEL
    model = MODEL.replace('grid = torch.tensor(kw["rows"])\n', 'grid = torch.tensor(kw["rows"]).cuda()\n')
    assert model != MODEL
    assert next_tower(tmp_path, model=model) == [7]
