"""A field stored from a call of a function annotated to return a class holds that class
(attr_classes.py, `RETURNS`).

vLLM 0.33's Kimi-K3 layers keep an optional fused GEMM kernel object:

    self.gemm_rs_ar = None
    if run_gemm_rs_ar:
        from ...gemm_rs_ar import get_gemm_rs_ar     # def get_gemm_rs_ar() -> GemmRsAr
        gemm_rs_ar = get_gemm_rs_ar()
        if gemm_rs_ar.can_run(self.o_proj):
            self.gemm_rs_ar = gemm_rs_ar

and call `self.gemm_rs_ar.apply(out, self.o_proj)` in `forward`. A call's result was a store of
no known class, so the field's name was unknown and the call went by name to every `apply` the
import closure allows: the multimodal processor's `apply`, whose input post-processing (a
`.cpu()` of a processor output) then counted as per step. The function's return annotation
names the object's class as a parameter's annotation does (a subclass's override still found
by receivers.py). VALID: a local bound to the call, and the call stored directly. INVALID twins:
no return annotation, an annotation of a union, another store of no known class: the call is
still dispatched by name.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

PROCESSOR = """
import torch


class MediaPipeline:
    def apply(self, inputs: torch.Tensor, timing):
        return int(inputs.sum().item())
"""

KERNEL = """
import torch

from pkg.processor import MediaPipeline


class FusedGemm:
    def apply(self, x: torch.Tensor, linear) -> torch.Tensor:
        return linear(x)


_kernel = None


def get_kernel(){returns}:
    assert _kernel is not None
    return _kernel
"""

LAYER = """
import torch
from torch import nn

from pkg.processor import MediaPipeline


class Layer(nn.Module):
    def __init__(self, use_kernel: bool):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.gemm = None
        if use_kernel:
            from pkg.kernel import get_kernel
{store}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gemm is not None:
            return self.gemm.apply(x, self.proj)
        return self.proj(x)
"""

VIA_LOCAL = "            kernel = get_kernel()\n            self.gemm = kernel\n"
DIRECT = "            self.gemm = get_kernel()\n"
SYNC = ("pkg/processor.py", 7, "SYN201")


def _run(tmp_path, returns=" -> FusedGemm", store=VIA_LOCAL, other=""):
    files = {"processor.py": PROCESSOR, "kernel.py": KERNEL.format(returns=returns),
             "layer.py": LAYER.format(store=store)}
    if other:
        files["other.py"] = other
    return lint_package(tmp_path, files)


def test_a_field_stored_from_a_local_bound_to_an_annotated_call_holds_its_class(tmp_path):
    assert SYNC not in where(_run(tmp_path))


def test_a_field_stored_from_an_annotated_call_holds_its_class(tmp_path):
    assert SYNC not in where(_run(tmp_path, store=DIRECT))


def test_an_optional_return_annotation_names_the_class_too(tmp_path):
    assert SYNC not in where(_run(tmp_path, returns=" -> FusedGemm | None"))


def test_without_a_return_annotation_the_call_is_still_dispatched_by_name(tmp_path):
    assert SYNC in where(_run(tmp_path, returns=""))


def test_a_union_return_annotation_names_no_one_class(tmp_path):
    assert SYNC in where(_run(tmp_path, returns=" -> FusedGemm | MediaPipeline", store=DIRECT))


def test_another_store_of_no_known_class_keeps_the_name_unknown(tmp_path):
    other = "def wire(layer, kernel):\n    layer.gemm = kernel\n"
    assert SYNC in where(_run(tmp_path, other=other))
