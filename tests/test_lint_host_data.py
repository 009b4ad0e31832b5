"""Host data the linter used to take for device data (issue 24, branch h-host; docs/lint.md,
"How it decides where a value lives"): a torch op whose input tensor is on the host, a
parameter a branch replaces with host data, `isinstance(x, list)` narrowing, pandas frames.
Each case has a VALID package (nothing reported) and an INVALID twin where the value is on the
device, which is still reported."""

from __future__ import annotations

import textwrap

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


def test_tensor_typed_parameter_passed_on_is_the_callers_to_place(tmp_path):
    # SGLang sigma_schedule: `_convert_to_beta(in_sigmas: torch.Tensor)` passes its parameter to
    # `_sigma_bounds`, which `.item()`s it; the scheduler passes `torch.from_numpy(a).to(dtype=...)`
    mixin = """
        import numpy as np
        import torch

        class Mixin:
            def _bounds(self, in_sigmas):
                return in_sigmas[-1].item()

            def _convert(self, in_sigmas: torch.Tensor, n: int):
                return np.linspace(0, self._bounds(in_sigmas), n)
    """
    sched = """
        import numpy as np
        import torch
        from pkg.mix import Mixin

        class Sched(Mixin):
            def step(self, x: torch.Tensor, n: int):
                sigmas = torch.from_numpy(np.linspace(0, 1, n)).to(dtype=torch.float32)
                return self._convert({arg}, n=n)
    """
    valid = lint_package(tmp_path / "valid", {"mix.py": mixin, "sched.py": sched.format(arg="in_sigmas=sigmas")})
    assert where(valid) == []
    invalid = lint_package(tmp_path / "invalid", {"mix.py": mixin, "sched.py": sched.format(arg="x")})
    assert ("pkg/sched.py", 9, "SYN601") in where(invalid)


def test_host_function_patterns_match_a_namespace_package_by_its_full_name(tmp_path):
    # SGLang 0.5.23 ships `sglang/srt/` without `__init__.py`: its files are named from below
    # (`managers.tokenizer_manager`), the library facts from the top (`pkg.srt.managers...`)
    root = tmp_path / "pkg"
    (root / "srt" / "managers").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "srt" / "managers" / "__init__.py").write_text("")
    (root / "srt" / "managers" / "tokenizer.py").write_text(textwrap.dedent("""
        import torch

        class TokenizerManager:
            def step(self, out: torch.Tensor):
                return out.tolist()
    """))
    from syncscope.lint.engine import lint_paths

    from lint_helpers import make_config

    def run(patterns: list[str]):
        facts = tmp_path / f"facts{abs(hash(tuple(patterns)))}.toml"
        facts.write_text("[host]\nfunctions = [%s]\n" % ", ".join(f'"{p}"' for p in patterns))
        config = make_config(tmp_path, include_cold=False, library_facts=str(facts))
        return where(lint_paths([str(root)], config, use_cache=False, jobs=1))

    assert run([]) == [("pkg/srt/managers/tokenizer.py", 6, "SYN202")]
    assert run(["pkg.srt.managers.tokenizer.*"]) == []
    assert run(["pkg.srt.managers.other.*"]) == [("pkg/srt/managers/tokenizer.py", 6, "SYN202")]


def test_a_parameter_copied_to_the_device_is_no_longer_what_the_callers_passed(tmp_path):
    # vLLM moss_audio: `feature_lens = feature_lens.to(device=x.device)` in one branch, a device
    # factory in the other, then `.item()`: a sync whatever the (host) callers pass
    encoder = """
        import torch

        class Encoder(torch.nn.Module):
            def forward(self, x: torch.Tensor, feature_lens: torch.Tensor | None = None):
                if feature_lens is None:
                    feature_lens = torch.full((x.size(0),), x.size(-1), device=x.device)
                else:
                    feature_lens = feature_lens.{copy}
                return [x[i, : int(feature_lens[i].item())] for i in range(x.shape[0])]
    """
    model = """
        import torch
        from pkg.encoder import Encoder

        class Model(torch.nn.Module):
            def __init__(self):
                self.enc = Encoder()

            def forward(self, x, lens_cpu: torch.Tensor):
                return self.enc(x, feature_lens=lens_cpu)
    """
    moved = lint_package(tmp_path / "moved", {"encoder.py": encoder.format(copy="to(device=x.device)"),
                                               "model.py": model})
    assert ("pkg/encoder.py", 10, "SYN201") in where(moved)


def test_a_starred_call_may_pass_a_device_value_to_a_parameter_it_does_not_name(tmp_path):
    # vLLM dots3_note: `self._process_video_input(*video_inputs)`, whose callee `.tolist()`s
    # its tensor-typed parameters
    source = """
        import torch

        class M(torch.nn.Module):
            def _video(self, counts: torch.Tensor):
                return counts.tolist()

            def forward(self, x: torch.Tensor, kwargs: dict):
                inputs = (kwargs.get("video_counts"),)
                return self._video({args})
    """
    starred = where(lint_package(tmp_path / "starred", {"m.py": source.format(args="*inputs")}))
    assert ("pkg/m.py", 10, "SYN601") in starred
    host = where(lint_package(tmp_path / "host", {"m.py": source.format(args="x.cpu()")}))
    assert ("pkg/m.py", 10, "SYN601") not in host


def test_isinstance_list_in_a_conditional_expression(tmp_path):
    # vLLM kimi_k25_vit: `shapes = grid_thws if isinstance(grid_thws, list) else
    # grid_thws.tolist()`, then `1 <= h` for its items: Python ints on both paths
    source = """
        import torch

        class Tower(torch.nn.Module):
            def forward(self, x: torch.Tensor, grid_thws: torch.Tensor):
                shapes = grid_thws if isinstance(grid_thws, {kind}) else grid_thws.{convert}
                assert all(1 <= h <= self.max_height and 1 <= w <= self.max_width for t, h, w in shapes)
                return x
    """
    found = where(lint_package(tmp_path / "valid", {"m.py": source.format(kind="list", convert="tolist()")}))
    assert ("pkg/m.py", 7, "SYN206") not in found
    # the other branch keeps a tensor: its items are tensors, whatever the test says
    found = where(lint_package(tmp_path / "invalid", {"m.py": source.format(kind="list", convert="cuda()")}))
    assert ("pkg/m.py", 7, "SYN206") in found


def test_vllm_request_intake_is_host_only_code(tmp_path):
    # vLLM 0.33.0 multimodal/hasher.py `serialize_item` (`obj.cpu()`) and renderers/base.py
    # `_process_embeds` (`prompt_embeds.cpu()`): the API server process, once per request
    from syncscope.lint.engine import lint_paths

    from lint_helpers import make_config

    source = textwrap.dedent("""
        import torch

        class MultiModalHasher:
            def serialize_item(self, obj: torch.Tensor):
                return obj.cpu().numpy().tobytes()
    """)

    def run(package: str, name: str):
        root = tmp_path / name.replace(".py", "") / package
        (root / "multimodal").mkdir(parents=True)
        (root / "__init__.py").write_text("")
        (root / "multimodal" / "__init__.py").write_text("")
        (root / "multimodal" / name).write_text(source)
        return where(lint_paths([str(root)], make_config(root.parent, include_cold=False), use_cache=False, jobs=1))

    assert run("vllm", "hasher.py") == []
    assert run("vllm", "encoder.py") == [("vllm/multimodal/encoder.py", 6, "SYN203")]


def test_vllm_placeholder_ranges_are_host_data(tmp_path):
    # vLLM 0.33.0 multimodal/inputs.py `PlaceholderRange.extract_embeds_range`: `nonzero` and
    # `.tolist()` of `self.is_embed`, a mask the processors build on the host with the request
    from syncscope.lint.engine import lint_paths

    from lint_helpers import make_config

    source = textwrap.dedent("""
        import torch

        class PlaceholderRange:
            def extract_embeds_range(self):
                starts = torch.nonzero(self.is_embed.int()).flatten()
                return starts.tolist()

        class Runner:
            def execute_model(self, pos: PlaceholderRange):
                return pos.extract_embeds_range()
    """)

    def run(name: str):
        root = tmp_path / name.replace(".py", "") / "vllm"
        (root / "multimodal").mkdir(parents=True)
        (root / "__init__.py").write_text("")
        (root / "multimodal" / "__init__.py").write_text("")
        (root / "multimodal" / name).write_text(source)
        return where(lint_paths([str(root)], make_config(root.parent, include_cold=False), use_cache=False, jobs=1))

    assert run("inputs.py") == []
    # the same class in another module is read as any other: its mask may be on the device
    assert ("vllm/multimodal/ranges.py", 7, "SYN202") in run("ranges.py")
