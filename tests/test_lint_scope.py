"""The per-step scope (syncscope/lint/branches.py, reachability.py): a finding is reported by
default only when its line runs every serving step on a CUDA GPU, and says which per-step root
reaches it. Each class of issue 24 has an INVALID package (still reported) and a VALID one (not
reported by default, reported as cold with `include_cold`). Small multi-module packages: the
root in one module, the helper in another."""

from __future__ import annotations

import json
import io
import textwrap

from syncscope.lint.engine import lint_paths
from syncscope.lint.output import write_json, write_text
from syncscope.render.sarif import to_sarif

from lint_helpers import make_config


def lint_package(tmp_path, files: dict[str, str], **overrides):
    root = tmp_path / "pkg"
    root.mkdir(exist_ok=True)
    (root / "__init__.py").write_text("")
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.parent != root and not (path.parent / "__init__.py").exists():
            (path.parent / "__init__.py").write_text("")
        path.write_text(textwrap.dedent(source))
    overrides.setdefault("include_cold", False)
    return lint_paths([str(root)], make_config(tmp_path, **overrides), use_cache=False, jobs=1)


def where(run) -> list[tuple[str, int, str]]:
    return sorted((f.site.path, f.site.line, f.code) for f in run.findings)


MODEL = """
    import torch
    from pkg.ops import helper

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            return helper(x)
"""


# -- 1. code that never runs on CUDA ------------------------------------------------------
PLATFORM_OPS = """
    import torch
    from pkg.platforms import current_platform, is_npu

    _is_npu = is_npu()
    _is_cuda = not _is_npu

    def helper(x: torch.Tensor):
        if _is_npu:
            n = x.sum().item()
        elif current_platform.is_rocm():
            n = int(x.max())
        if _is_cuda:
            y = x + 1
        else:
            y = x.cpu()
        if not current_platform.is_cuda():
            return x.tolist()
        return y
"""


def test_branches_for_other_platforms_are_not_per_step(tmp_path):
    run = lint_package(tmp_path, {"model.py": MODEL, "ops.py": PLATFORM_OPS, "platforms.py": "def is_npu(): return False\n"})
    assert where(run) == []
    cold = lint_package(tmp_path, {}, include_cold=True)
    reasons = {f.site.line: f.cold for f in cold.findings if f.site.path == "pkg/ops.py"}
    assert set(reasons) == {10, 12, 16, 18}
    assert "`_is_npu` is false on CUDA" in reasons[10]
    assert "is_rocm" in reasons[12]


def test_the_cuda_branch_is_per_step(tmp_path):
    ops = PLATFORM_OPS.replace("y = x + 1", "y = x.tolist()")
    run = lint_package(tmp_path, {"model.py": MODEL, "ops.py": ops, "platforms.py": "def is_npu(): return False\n"})
    assert ("pkg/ops.py", 14, "SYN202") in where(run)
    assert ("pkg/model.py", 7, "SYN601") in where(run)


def test_code_with_no_per_step_root_at_all_is_linted_whole(tmp_path):
    """A script or a kernel library has no `forward`, `execute_model`, ...: reachability has
    nothing to go by, so only the cold lines are left out."""
    run = lint_package(tmp_path, {"ops.py": PLATFORM_OPS, "platforms.py": "def is_npu(): return False\n"})
    assert where(run) == []
    ops = PLATFORM_OPS.replace("y = x + 1", "y = x.tolist()")
    run = lint_package(tmp_path, {"ops.py": ops})
    assert where(run) == [("pkg/ops.py", 14, "SYN202")]


def test_files_and_methods_for_other_platforms_are_not_per_step(tmp_path):
    run = lint_package(tmp_path, {
        "hardware_backend/npu/attention.py": """
            import torch

            class AscendBackend(torch.nn.Module):
                def forward(self, x: torch.Tensor):
                    return x.sum().item()
        """,
        "layer.py": """
            import torch

            class Layer(torch.nn.Module):
                def forward_npu(self, x: torch.Tensor):
                    return x.sum().item()

                def forward_cuda(self, x: torch.Tensor):
                    return x.max().item()
        """,
    })
    assert where(run) == [("pkg/layer.py", 9, "SYN201")]


# -- 2. debug, trace and diagnostics switches -----------------------------------------------
def test_debug_switches_are_not_per_step_and_do_not_make_callers_sync(tmp_path):
    run = lint_package(tmp_path, {
        "model.py": MODEL,
        "ops.py": """
            import os
            import torch
            from pkg import envs
            from pkg.stats import log_stats

            def helper(x: torch.Tensor):
                if envs.VLLM_DEBUG_DUMP_TENSORS:
                    print(x.sum().item())
                if os.environ.get("SGLANG_TRACE_SHAPES"):
                    print(x.tolist())
                if envs.VLLM_USE_FAST_PATH:
                    return x.max().item()
                log_stats(x)
                return x
        """,
        "stats.py": """
            import torch
            from pkg import envs

            def log_stats(x: torch.Tensor):
                if envs.DEBUG_STATS:
                    print(float(x.mean()))
        """,
        "envs.py": "VLLM_DEBUG_DUMP_TENSORS = False\nVLLM_USE_FAST_PATH = True\nDEBUG_STATS = False\n",
    })
    # a feature flag is not a debug switch: its sync is reported; `log_stats` syncs only when
    # debugging, so the call to it is not
    assert where(run) == [("pkg/model.py", 7, "SYN601"), ("pkg/ops.py", 13, "SYN201")]


# -- 3. code that runs once or rarely ------------------------------------------------------
def test_code_no_per_step_root_reaches_is_cold(tmp_path):
    run = lint_package(tmp_path, {
        "model.py": MODEL,
        "ops.py": """
            import torch

            def helper(x: torch.Tensor):
                try:
                    return x + 1
                except RuntimeError:
                    raise ValueError(f"bad input: {x.sum().item()}")
        """,
        "quant.py": """
            import torch

            class Fp8Method:
                def process_weights_after_loading(self, layer):
                    layer.scale_host = float(layer.weight_scale.max().item())

            def check_close(a: torch.Tensor, b: torch.Tensor):
                return (a - b).abs().max().item()
        """,
    })
    assert where(run) == []
    cold = lint_package(tmp_path, {}, include_cold=True)
    reasons = {(f.site.path, f.site.line): f.cold for f in cold.findings}
    assert reasons[("pkg/ops.py", 8)] == "error handler (`except`)"
    assert reasons[("pkg/quant.py", 9)] == "not reached from a per-step root"


def test_a_helper_in_another_module_reached_from_forward_is_per_step(tmp_path):
    run = lint_package(tmp_path, {
        "model.py": MODEL,
        "ops.py": """
            import torch

            def helper(x: torch.Tensor):
                return x.sum().item()
        """,
    })
    assert where(run) == [("pkg/model.py", 7, "SYN601"), ("pkg/ops.py", 5, "SYN201")]
    helper = next(f for f in run.findings if f.code == "SYN201")
    assert [step[0] for step in helper.per_step] == ["pkg.model.Model.forward", "pkg.ops.helper"]


def test_configured_hot_roots_and_unknown_receivers(tmp_path):
    """`hot-roots` adds roots; a call on a receiver of unknown class reaches every method of
    that name (`self.quant_method.apply`); an attribute set from a constructor is typed by it."""
    files = {
        "model.py": "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n",
        "runner.py": """
            import torch
            from pkg.meta import Builder

            class Runner:
                def __init__(self, device, quant_method):
                    self.builder = Builder()
                    self.quant_method = quant_method

                def run_one_batch(self, x: torch.Tensor):
                    meta = self.builder.make(x)
                    return self.quant_method.apply(meta)
        """,
        "meta.py": """
            import torch

            class Builder:
                def make(self, x: torch.Tensor):
                    return x[: int(x.max())]

            class Fp8:
                def apply(self, x: torch.Tensor):
                    return x.tolist()
        """,
    }
    assert where(lint_package(tmp_path, files)) == []
    run = lint_package(tmp_path, {}, hot_roots=["Runner.run_one_batch"])
    assert where(run) == [("pkg/meta.py", 6, "SYN205"), ("pkg/meta.py", 10, "SYN202"),
                          ("pkg/runner.py", 11, "SYN601")]


# -- reports -------------------------------------------------------------------------------
def test_reports_say_why_a_finding_runs_per_step(tmp_path):
    run = lint_package(tmp_path, {
        "model.py": MODEL,
        "ops.py": "import torch\n\ndef helper(x: torch.Tensor):\n    return x.sum().item()\n",
    })
    text = io.StringIO()
    write_text(run.findings, run.texts, text)
    assert "= per step: from `Model.forward` (pkg/model.py:6) -> helper()" in text.getvalue()
    data = io.StringIO()
    write_json(run.findings, data)
    item = next(d for d in json.loads(data.getvalue()) if d["code"] == "SYN201")
    assert item["category"] == "per-step"
    assert item["per_step"]["root"] == {"function": "pkg.model.Model.forward", "path": "pkg/model.py", "line": 6}
    sarif = to_sarif(run.findings, tool_name="syncscope", rules=[])
    result = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "SYN201")
    assert result["properties"]["perStep"][0]["function"] == "pkg.model.Model.forward"


# -- 5. guards a caller's arguments decide ---------------------------------------------------
GUARDED = """
    import torch

    def prepare_chunk_indices(cu_seqlens: torch.Tensor, chunk_size: int):
        return (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()

    def chunk_fwd(x: torch.Tensor, cu_seqlens: torch.Tensor, chunk_indices=None):
        if chunk_indices is None and cu_seqlens is not None:
            chunk_indices = prepare_chunk_indices(cu_seqlens, 64)
        return x, chunk_indices
"""


# a layer that passes `chunk_indices` every step
GUARDED_CALLER = """
            import torch
            from pkg.ops import chunk_fwd

            class Layer(torch.nn.Module):
                def forward(self, x: torch.Tensor, meta):
                    return chunk_fwd(x, meta.cu_seqlens, chunk_indices=meta.chunk_indices)
"""


def test_a_sync_under_a_none_guard_every_caller_rules_out_is_not_per_step(tmp_path):
    run = lint_package(tmp_path, {"ops.py": GUARDED, "model.py": GUARDED_CALLER})
    assert where(run) == []
    cold = lint_package(tmp_path, {}, include_cold=True)
    assert any("runs only when `chunk_indices` is None" in (f.cold or "") for f in cold.findings)


def test_a_caller_that_leaves_the_guarded_parameter_out_is_flagged(tmp_path):
    run = lint_package(tmp_path, {
        "ops.py": GUARDED,
        "model.py": GUARDED_CALLER + """
            class Other(torch.nn.Module):
                def forward(self, x: torch.Tensor, cu_seqlens: torch.Tensor):
                    return chunk_fwd(x, cu_seqlens)
        """,
    })
    # SYN601: the helper syncs on the tensor-typed parameter the call passes (the callers
    # tell where it lives), not whatever it is given
    assert ("pkg/model.py", 11, "SYN601") in where(run)


def test_a_required_optional_parameter_is_no_guard_its_callers_rule_out(tmp_path):
    # `spec_info: Optional[SpecInfo]` with no default: every caller passes it, and passes None
    # on a plain decode step (SGLang 0.5.21 `_apply_cuda_graph_metadata`); its `else` runs
    ops = """
        import torch
        from typing import Optional

        def apply_metadata(seq_lens: torch.Tensor, spec_info: Optional[object], flag: bool | None):
            if spec_info is not None:
                return seq_lens
            else:
                return seq_lens.cpu().numpy()

        def apply_other(seq_lens: torch.Tensor, spec_info: Optional[object] = None):
            if spec_info is not None:
                return seq_lens
            else:
                return seq_lens.cpu().numpy()
    """
    run = lint_package(tmp_path, {
        "ops.py": ops,
        "model.py": """
            import torch
            from pkg.ops import apply_metadata, apply_other

            class Layer(torch.nn.Module):
                def forward(self, x: torch.Tensor, batch):
                    apply_other(x, spec_info=batch.spec_info)
                    return apply_metadata(x, spec_info=batch.spec_info, flag=None)
        """,
    })
    ops_lines = sorted({line for at, line, _ in where(run) if at == "pkg/ops.py"})
    # the required Optional parameter keeps its `else` per step; the one that is None only by
    # its default is still ruled out by the callers that pass it
    assert ops_lines == [9], where(run)


# -- 4. host data the linter took for device data --------------------------------------------
def test_multimodal_fields_declared_keep_on_cpu_are_host_data(tmp_path):
    run = lint_package(tmp_path, {
        "model.py": """
            import torch
            from pkg.inputs import MultiModalFieldConfig

            class VisionModel(torch.nn.Module):
                def _get_mm_fields_config(self, hf_inputs):
                    return dict(
                        pixel_values=MultiModalFieldConfig.batched("image"),
                        num_patches=MultiModalFieldConfig.batched("image", keep_on_cpu=True),
                    )

                def forward(self, pixel_values: torch.Tensor, **kwargs):
                    num_patches = kwargs["num_patches"]
                    feats = pixel_values.flatten(1)
                    split = feats.split(num_patches.tolist())
                    return split, int(pixel_values.sum())
        """,
        "inputs.py": "class MultiModalFieldConfig:\n    @staticmethod\n    def batched(m, keep_on_cpu=False):\n        return m\n",
    })
    assert where(run) == [("pkg/model.py", 16, "SYN205")]
