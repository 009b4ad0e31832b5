"""A submodule picked from a module's dict of classes (issue 24, "host data taken for device
data"; vLLM's dots3_note vision tower: `adapter_cls = _ADAPTER_CLASSES.get(config.adapter_type);
self.adapter = adapter_cls(config)`, then `self.adapter(hidden_states, meta.grid_thw_cpu)`).
The field holds one of the dict's classes, so what the call passes reaches each class's `forward`
(registry_fields.py). VALID: an adapter fed only host data loses its findings; INVALID: a device
argument, a dict that is not all classes, or a name bound twice keep them."""

from __future__ import annotations

from test_lint_scope import lint_package

TOWER = """
    import torch
    from torch import nn

    class ShuffleAdapter(nn.Module):
        def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
            out = []
            for i in range(grid_thw.shape[0]):
                t, h, w = grid_thw[i]
                out.append(x.reshape(int(h), int(w), -1))
            return torch.cat(out)

    class MergeAdapter(nn.Module):
        def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
            return x

    _ADAPTERS = {"shuffle": ShuffleAdapter, "merge": MergeAdapter}

    class Tower(nn.Module):
        def __init__(self, config):
            super().__init__()
            adapter_cls = _ADAPTERS.get(config.adapter_type)
            if adapter_cls is None:
                raise ValueError(config.adapter_type)
            self.adapter = adapter_cls(config)

        def forward(self, x: torch.Tensor, grid_thw_cpu: torch.Tensor):
            return self.adapter(x, grid_thw_cpu)
"""


def flagged(tmp_path, tower=TOWER) -> list[int]:
    run = lint_package(tmp_path, {"tower.py": tower}, include_cold=True)
    return sorted({f.site.line for f in run.findings if f.site.path == "pkg/tower.py"})


def test_a_field_picked_from_a_dict_of_classes_feeds_each_forward(tmp_path):
    assert flagged(tmp_path) == []


def test_a_direct_lookup_call_picks_too(tmp_path):
    tower = TOWER.replace('''            adapter_cls = _ADAPTERS.get(config.adapter_type)
            if adapter_cls is None:
                raise ValueError(config.adapter_type)
            self.adapter = adapter_cls(config)''', '''            self.adapter = _ADAPTERS[config.adapter_type](config)''')
    assert tower != TOWER
    assert flagged(tmp_path, tower) == []


def test_a_device_argument_keeps_the_findings(tmp_path):
    # INVALID: the tower moves the grid to the device before the call
    tower = TOWER.replace("return self.adapter(x, grid_thw_cpu)", "return self.adapter(x, grid_thw_cpu.to(x.device))")
    assert tower != TOWER
    assert 10 in flagged(tmp_path, tower)


def test_a_dict_holding_something_else_picks_nothing(tmp_path):
    # INVALID: a factory function among the values: the field's class is not known
    tower = TOWER.replace('''_ADAPTERS = {"shuffle": ShuffleAdapter, "merge": MergeAdapter}''',
                          '''_ADAPTERS = {"shuffle": ShuffleAdapter, "merge": make_merge}''')
    assert tower != TOWER
    assert 10 in flagged(tmp_path, tower)


def test_a_name_bound_twice_picks_nothing(tmp_path):
    # INVALID: `adapter_cls` may be another class than the dict's
    tower = TOWER.replace('''                raise ValueError(config.adapter_type)''',
                          '''                adapter_cls = config.fallback_cls''')
    assert tower != TOWER
    assert 10 in flagged(tmp_path, tower)
