"""Host data the linter used to take for device data (issue 24, branch h-host; docs/lint.md,
"How it decides where a value lives"): a torch op whose input tensor is on the host, a
parameter a branch replaces with host data, `isinstance(x, list)` narrowing, pandas frames.
Each case has a VALID package (nothing reported) and an INVALID twin where the value is on the
device, which is still reported."""

from __future__ import annotations

from test_lint_host_facts import lint_package as _lint_package, where


def lint_package(path, files, **overrides):
    path.mkdir(parents=True, exist_ok=True)  # a VALID and an INVALID package in one test
    return _lint_package(path, files, **overrides)


def test_torch_op_on_a_host_tensor_stays_on_the_host(tmp_path):
    # vLLM qwen2_5_vl.get_window_index_thw: `torch.arange` without a device, then `F.pad` with
    # pads computed from the parameters: the padded index is still a host tensor
    source = """
        import torch
        import torch.nn.functional as F

        class Tower(torch.nn.Module):
            def forward(self, x, t, h, w):
                pad_h = 8 - h % 8
                index = torch.arange(t * h * w{device}).reshape(t, h, w)
                index_padded = F.pad(index, (0, pad_h, 0, pad_h), "constant", -100)
                return index_padded[index_padded != -100]
    """
    assert where(lint_package(tmp_path / "valid", {"m.py": source.format(device="")})) == []
    found = where(lint_package(tmp_path / "invalid", {"m.py": source.format(device=", device=x.device")}))
    assert found == [("pkg/m.py", 10, "SYN101")]


def test_parameter_replaced_by_host_data_in_one_branch_is_still_the_parameter(tmp_path):
    # vLLM mimo_v2_omni: the tower's `forward` rebuilds `grid_thw` with `torch.tensor(...)`
    # when a caller passed a list; every caller passes `grid_thw.tolist()`
    tower = """
        import torch

        class Tower(torch.nn.Module):
            def forward(self, x: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
                if not isinstance(grid_thw, torch.Tensor):
                    grid_thw = torch.tensor(grid_thw, dtype=torch.long)
                return torch.repeat_interleave(grid_thw[:, 1] * grid_thw[:, 2], grid_thw[:, 0])
    """
    model = """
        import torch
        from pkg.tower import Tower

        class Model(torch.nn.Module):
            def __init__(self):
                self.visual = Tower()

            def forward(self, x, grid_thw_cpu: torch.Tensor, mask: torch.Tensor):
                return self.visual(x, grid_thw={arg})
    """
    valid = lint_package(tmp_path / "valid", {"tower.py": tower, "model.py": model.format(arg="grid_thw_cpu.tolist()")})
    assert where(valid) == []
    invalid = lint_package(tmp_path / "invalid", {"tower.py": tower, "model.py": model.format(arg="mask.cuda()")})
    assert ("pkg/tower.py", 8, "SYN104") in where(invalid)


def test_isinstance_list_narrows_to_python_values(tmp_path):
    # vLLM calculate_timestamps: `if not isinstance(indices, list): indices = indices.tolist()`
    # then `int(i)` for its items: Python ints on both paths
    source = """
        import torch

        def timestamps(indices: list[int] | torch.Tensor, ms: int):
            if not isinstance(indices, {kind}):
                indices = indices.tolist()
            return [int(i) * ms for i in indices]

        class M(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                return timestamps(x, 3)
    """
    found = where(lint_package(tmp_path / "valid", {"m.py": source.format(kind="list")}))
    assert ("pkg/m.py", 7, "SYN205") not in found
    # `isinstance(indices, torch.Tensor)` is no plain type: in its `not` branch the tensor stays
    found = where(lint_package(tmp_path / "invalid", {"m.py": source.format(kind="(list, torch.Tensor)")}))
    assert ("pkg/m.py", 7, "SYN205") in found


def test_pandas_frames_are_host_data(tmp_path):
    # vLLM benchmarks BurstGPTDataset: `data.values.tolist()` of a DataFrame
    source = """
        import pandas as pd
        import torch

        class Dataset:
            def load(self, path):
                self.data = {make}

            def _rows(self, n: int) -> list:
                data = self.data.sample(n=n)
                return data.values.tolist()

            def sample(self, n: int):
                return self._rows(n)
    """
    valid = lint_package(tmp_path / "valid", {"m.py": source.format(make="pd.read_csv(path)")},
                         include_cold=True)
    assert where(valid) == []
    invalid = lint_package(tmp_path / "invalid", {"m.py": source.format(make="torch.load(path).cuda()")},
                           include_cold=True)
    assert ("pkg/m.py", 11, "SYN202") in where(invalid)
