"""Host facts of issue 24's last vLLM sample (docs/lint.md, "How it decides where a value
lives"): multimodal fields kept on the host that the model reads under other names (by key, and
down into the vision tower's parameters), flags a caller never sets, `isinstance` tests kept in
a local, and dtype comparisons. Each has a VALID package (nothing reported) and an INVALID one
(the same code where the value is on the device, still reported). Small multi-module packages."""

from __future__ import annotations

import textwrap

from syncscope.lint.engine import lint_paths

from lint_helpers import make_config


def lint_package(tmp_path, files: dict[str, str], **overrides):
    root = tmp_path / "pkg"
    root.mkdir(exist_ok=True)
    (root / "__init__.py").write_text("")
    for name, source in files.items():
        (root / name).write_text(textwrap.dedent(source))
    overrides.setdefault("include_cold", False)
    return lint_paths([str(root)], make_config(tmp_path, **overrides), use_cache=False, jobs=1)


def where(run) -> list[tuple[str, int, str]]:
    return sorted((f.site.path, f.site.line, f.code) for f in run.findings)


INPUTS = "class MultiModalFieldConfig:\n    @staticmethod\n    def batched(m, keep_on_cpu=False):\n        return m\n"

# The vision tower of another module: it syncs on `grid_thw` (its own name for the field).
VISION = """
    import torch

    class VisionTower(torch.nn.Module):
        def forward(self, x: torch.Tensor, grid_thw: torch.Tensor):
            sizes = grid_thw.prod(-1).tolist()
            cu = torch.repeat_interleave(grid_thw[:, 1] * grid_thw[:, 2], grid_thw[:, 0])
            return x.split(sizes), cu
"""


def model(keep_on_cpu: bool) -> str:
    flag = ", keep_on_cpu=True" if keep_on_cpu else ""
    return f"""
        import torch
        from pkg.inputs import MultiModalFieldConfig
        from pkg.vision import VisionTower

        class ImageInputs(dict):
            pass

        class VLModel(torch.nn.Module):
            def __init__(self):
                self.visual = VisionTower()

            def _get_mm_fields_config(self, hf_inputs):
                return dict(image_grid_thw=MultiModalFieldConfig.batched("image"{flag}))

            def _parse(self, **kwargs):
                return ImageInputs(pixel_values=kwargs.pop("pixel_values"),
                                   image_grid_thw=kwargs.pop("image_grid_thw", None))

            def _vision_forward(self, pixel_values: torch.Tensor, grid_thw: torch.Tensor):
                if grid_thw.shape[0] == 0:
                    return pixel_values
                return self.visual(pixel_values, grid_thw=grid_thw)

            def embed_multimodal(self, image_input):
                grid_thw = image_input["image_grid_thw"]
                n = grid_thw.prod(-1).tolist()
                return self._vision_forward(image_input["pixel_values"], grid_thw), n

            def forward(self, x: torch.Tensor, **kwargs):
                thw = kwargs.get("image_grid_thw")
                self.embed_multimodal(self._parse(**kwargs))
                return x, thw.tolist()
    """


def test_a_keep_on_cpu_field_read_by_key_and_passed_down_is_host_data(tmp_path):
    run = lint_package(tmp_path, {"model.py": model(keep_on_cpu=True), "vision.py": VISION, "inputs.py": INPUTS})
    assert where(run) == []


def test_the_same_field_not_kept_on_the_host_is_flagged(tmp_path):
    run = lint_package(tmp_path, {"model.py": model(keep_on_cpu=False), "vision.py": VISION, "inputs.py": INPUTS})
    found = where(run)
    assert ("pkg/model.py", 27, "SYN202") in found  # `grid_thw.prod(-1).tolist()` read by key
    assert ("pkg/model.py", 33, "SYN202") in found  # `thw.tolist()` from `kwargs.get(...)`
    assert ("pkg/vision.py", 6, "SYN202") in found and ("pkg/vision.py", 7, "SYN104") in found


def test_a_tower_that_one_caller_feeds_from_the_device_is_flagged(tmp_path):
    other = """
        import torch
        from pkg.vision import VisionTower

        class VideoModel(torch.nn.Module):
            def __init__(self):
                self.tower = VisionTower()

            def forward(self, x: torch.Tensor, grid: torch.Tensor):
                return self.tower(x, grid.to(x.device))
    """
    run = lint_package(tmp_path, {"model.py": model(keep_on_cpu=True), "vision.py": VISION, "inputs.py": INPUTS,
                                  "video.py": other})
    assert ("pkg/vision.py", 6, "SYN202") in where(run)


# -- a flag that defaults to off and that no call in the tree turns on ----------------------
KERNELS = """
    import torch

    def _validate(q: torch.Tensor):
        assert int(q.isnan().sum()) == 0

    def _attention(q: torch.Tensor, scale=None, check_input_valid: bool = False):
        if check_input_valid:
            _validate(q)
        return q * 2

    def attention(q: torch.Tensor, **kwargs):
        return _attention(q, **kwargs)

    def checked_attention(q: torch.Tensor, check: bool = False):
        return _attention(q, check_input_valid=check)
"""


def flag_model(*calls: str) -> str:
    body = "\n".join(f"                y = {call}" for call in calls)
    return f"""
        import torch
        from pkg.kernels import attention, checked_attention

        class Layer(torch.nn.Module):
            def forward(self, x: torch.Tensor):
{body}
                return y
    """


def test_a_branch_under_a_flag_no_caller_turns_on_is_not_per_step(tmp_path):
    model = flag_model("attention(x)", "attention(x, check_input_valid=False)", "checked_attention(x)",
                       "checked_attention(x, check=None)")
    run = lint_package(tmp_path, {"kernels.py": KERNELS, "model.py": model})
    assert where(run) == []
    cold = lint_package(tmp_path, {}, include_cold=True)
    # flagguards.py ("... is on") or stepargs.py ("... and no per-step call passes arguments
    # that take it"): whichever rule decides first, the reason names the flag
    assert any("runs only when `check_input_valid`" in (f.cold or "") for f in cold.findings)


def test_a_caller_that_turns_the_flag_on_is_flagged(tmp_path):
    for call in ("attention(x, check_input_valid=True)", "checked_attention(x, check=True)",
                 "checked_attention(x, self.strict)", "attention(x, **self.options)"):
        run = lint_package(tmp_path, {"kernels.py": KERNELS, "model.py": flag_model("attention(x)", call)})
        assert ("pkg/kernels.py", 5, "SYN205") in where(run), call


# -- values that are no tensors ------------------------------------------------------------
def test_the_else_of_a_tensor_test_kept_in_a_local_holds_no_tensor(tmp_path):
    run = lint_package(tmp_path, {"model.py": """
        import torch

        class Norm(torch.nn.Module):
            def forward(self, x: torch.Tensor, alpha: torch.Tensor | float):
                gate = isinstance(alpha, torch.Tensor)
                scale = 1.0
                if gate:
                    x = x * alpha
                else:
                    scale = float(alpha)
                not_tensor = not torch.is_tensor(alpha)
                if not_tensor:
                    scale = scale + float(alpha)
                if gate:
                    scale = float(alpha)
                return x * scale
    """})
    assert where(run) == [("pkg/model.py", 16, "SYN205")]  # the branch where alpha is a tensor


def test_a_value_compared_with_a_torch_dtype_is_a_dtype(tmp_path):
    run = lint_package(tmp_path, {
        "utils.py": """
            import torch

            def is_fp8(x: torch.dtype | torch.Tensor) -> bool:
                if isinstance(x, torch.Tensor):
                    x = x.dtype
                return x == torch.float8_e4m3fn or x == torch.float8_e4m3fnuz
        """,
        "model.py": """
            import torch
            from pkg.utils import is_fp8

            class Linear(torch.nn.Module):
                def forward(self, x: torch.Tensor, w: torch.Tensor):
                    if is_fp8(w):
                        x = x.to(torch.bfloat16)
                    if w.dtype == torch.float8_e4m3fn and x == torch.bfloat16:
                        x = x * 2
                    if x == 1024:
                        x = x + 1
                    return x
        """,
    })
    assert where(run) == [("pkg/model.py", 11, "SYN206")]  # `x == 1024` compares the tensor itself


def test_the_items_of_a_list_of_tensors_are_no_python_numbers(tmp_path):
    # vLLM 0.33.0 multimodal/inputs.py:619: `batch = cast(list[torch.Tensor], batch)`, then
    # `out[tuple(slices)] = tensor` for each item: a tensor copied in, not a number stored
    run = lint_package(tmp_path, {"model.py": """
        from typing import cast

        import torch

        class Batcher(torch.nn.Module):
            def forward(self, batch: list, sizes: list[int], parts: list[torch.Tensor]):
                batch = cast(list[torch.Tensor], batch)
                out = batch[0].new_zeros((4, 4))
                for tensor in batch:
                    out[tuple(slice(0, n) for n in tensor.shape)] = tensor
                for part in parts:
                    out[0] = part
                for n in sizes:
                    out[n] = n
                return out
    """})
    assert where(run) == [("pkg/model.py", 15, "SYN404")]  # `out[n] = n` stores a number


def test_a_field_the_module_refills_on_the_device_is_not_host_data(tmp_path):
    # vLLM 0.33.0 kimi_vl.py: `image_grid_hws` is declared keep_on_cpu, but the encoder CUDA
    # graph's item selection rebuilds it with `torch.tensor(..., device=pixel_values.device)`
    refill = """
            def select_items(self, mm_kwargs, indices):
                grid = torch.tensor([[1, 2]] * len(indices), device=mm_kwargs["pixel_values"].device)
                return {"pixel_values": mm_kwargs["pixel_values"], "image_grid_thw": grid}
    """
    source = model(keep_on_cpu=True).replace("            def forward(self, x", textwrap.indent(
        textwrap.dedent(refill), "            ").lstrip("\n") + "\n            def forward(self, x", 1)
    run = lint_package(tmp_path, {"model.py": source, "vision.py": VISION, "inputs.py": INPUTS})
    assert ("pkg/vision.py", 6, "SYN202") in where(run)


def test_a_caller_passing_star_args_or_a_python_container_feeds_no_host_data(tmp_path):
    # vLLM 0.33.0 dots3_note: `self._process_video_input(*video_inputs)`; openpangu_vl: the
    # parsed input is a dict literal, whose items may be device tensors
    run = lint_package(tmp_path, {"vision.py": VISION, "model.py": """
        import torch
        from pkg.vision import VisionTower

        class Model(torch.nn.Module):
            def __init__(self):
                self.visual = VisionTower()

            def _image(self, pixel_values: torch.Tensor, grid_thw: torch.Tensor):
                return self.visual(pixel_values, grid_thw)

            def _video(self, image_input):
                grid_thw = image_input["grid"]
                return self.visual(image_input["pixels"], grid_thw=grid_thw)

            def forward(self, x: torch.Tensor, **kwargs):
                inputs = (kwargs.get("pixels"), kwargs.get("grid"))
                self._image(*inputs)
                return self._video({"pixels": x, "grid": kwargs.get("grid")})
    """})
    assert ("pkg/vision.py", 6, "SYN202") in where(run)


def test_a_parameter_reassigned_from_itself_is_still_what_the_callers_pass(tmp_path):
    # vLLM 0.33.0 ernie45_vl.py `_vision_forward`: `grid_thw = grid_thw[grid_thw > 0]`, then
    # `torch.repeat_interleave(grid_thw[:, 1:], grid_thw[:, 0], 0)` on the host-only field
    tower = """
        import torch

        class Tower(torch.nn.Module):
            def _vision(self, x: torch.Tensor, grid_thw: torch.Tensor):
                grid_thw = grid_thw[grid_thw > 0].reshape(-1, 3)
                return torch.repeat_interleave(grid_thw[:, 1:], grid_thw[:, 0], 0)

            def forward(self, x: torch.Tensor, grid_cpu: torch.Tensor, grid: torch.Tensor):
                return self._vision(x, grid_cpu), self._vision(x, grid_cpu[:1])
    """
    assert where(lint_package(tmp_path, {"model.py": tower})) == []
    device_caller = tower.replace("self._vision(x, grid_cpu[:1])", "self._vision(x, grid)")
    assert ("pkg/model.py", 7, "SYN104") in where(lint_package(tmp_path, {"model.py": device_caller}))
