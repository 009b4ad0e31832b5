"""Host data the linter took for device data, session 14 (issue 24 class 4).

1. A list a function fills with host tensors only, joined by torch (`torch.cat`, `torch.stack`,
   `pad_sequence`), is host data (vLLM's FunAudioChat `embed_multimodal`: the items of the
   `keep_on_cpu` field `speech_attention_mask`, squeezed, appended to `mask_tensors` and padded
   back into one tensor; `.tolist()` of lengths computed from it reads host memory).
2. A parameter the function copies to the device with `non_blocking=True` is host data from the
   function's entry (vLLM's `merge_dual_encoder_text_and_vision`, whose `is_multimodal.any().item()`
   comes before `is_multimodal.to(device=..., non_blocking=True)`).

VALID: the joined list of host items, the parameter later copied pinned. INVALID: a list with one
device item (in any branch), a list extended, a list that is a parameter; a parameter rebound
before the copy, or copied to the CPU, keeps its sync."""

from __future__ import annotations

from test_lint_scope import lint_package

PROCESSOR = """
    class MultiModalFieldConfig:
        @staticmethod
        def batched(modality, keep_on_cpu=False):
            return (modality, keep_on_cpu)

    class AudioProcessor:
        def _get_mm_fields_config(self, hf_inputs):
            return {
                "speech_ids": MultiModalFieldConfig.batched("audio"),
                "speech_mask": MultiModalFieldConfig.batched("audio", keep_on_cpu=True),
            }
"""

MODEL = """
    import torch
    from torch import nn
    from .processor import AudioProcessor

    class Model(nn.Module):
        def embed_multimodal(self, **kwargs: object):
            speech_ids = kwargs.get("speech_ids")
            speech_mask = kwargs.get("speech_mask")
            mask_tensors = []
            for t in speech_mask:
                if t.dim() == 2:
                    t = t.squeeze(0)
                mask_tensors.append(t)
            EXTRA
            mask = nn.utils.rnn.pad_sequence(mask_tensors, batch_first=True, padding_value=0)
            lengths = (mask.sum(-1) + 3) // 4
            return lengths.tolist()

        def forward(self, input_ids: torch.Tensor, **kwargs: object):
            return self.embed_multimodal(**kwargs)
"""


def model_findings(tmp_path, extra="pass", model=MODEL) -> list[tuple[int, str]]:
    files = {"audio/processor.py": PROCESSOR, "audio/model.py": model.replace("EXTRA", extra)}
    run = lint_package(tmp_path, files, include_cold=True)
    return sorted((f.site.line, f.code) for f in run.findings if f.site.path == "pkg/audio/model.py")


def test_a_join_of_host_items_is_host_data(tmp_path):
    assert model_findings(tmp_path) == []


def test_torch_cat_and_stack_join_host_items_too(tmp_path):
    for join in ("torch.cat(mask_tensors)", "torch.stack(mask_tensors, dim=0)"):
        model = MODEL.replace("nn.utils.rnn.pad_sequence(mask_tensors, batch_first=True, padding_value=0)", join)
        assert model != MODEL
        assert model_findings(tmp_path, model=model) == []


def test_one_device_item_on_any_path_keeps_the_sync(tmp_path):
    # INVALID: a device tensor appended in one branch: the joined tensor may be on the device
    extra = "if speech_ids is not None:\n                mask_tensors.append(speech_ids.ne(0))"
    assert "SYN202" in {code for _, code in model_findings(tmp_path, extra)}


def test_a_list_extended_keeps_the_sync(tmp_path):
    # INVALID: `extend` adds items the walk does not follow
    assert (18, "SYN202") in model_findings(tmp_path, "mask_tensors.extend(kwargs.get('speech_ids'))")


def test_a_list_from_the_callers_keeps_the_sync(tmp_path):
    # INVALID: a list the function did not start empty holds what its callers put in it
    model = MODEL.replace("            mask_tensors = []\n", "            mask_tensors = kwargs.get('parts')\n")
    assert model != MODEL
    assert (18, "SYN202") in model_findings(tmp_path, model=model)


HELPERS = """
    import torch

    def merge(text: torch.Tensor, vision: torch.Tensor, is_multimodal: torch.Tensor | None) -> torch.Tensor:
        if is_multimodal is None or not bool(is_multimodal.any().item()):
            return text
        mm_mask = is_multimodal.to(device=vision.device, non_blocking=True)
        return torch.where(mm_mask.unsqueeze(-1), vision, text)
"""

CALLER = """
    import torch
    from .helpers import merge

    class Model(torch.nn.Module):
        def forward(self, input_ids: torch.Tensor, embeds: torch.Tensor, mask: torch.Tensor):
            return merge(embeds, embeds, mask)
"""


def helper_findings(tmp_path, helpers=HELPERS) -> list[tuple[str, int, str]]:
    run = lint_package(tmp_path, {"mm/helpers.py": helpers, "mm/model.py": CALLER}, include_cold=True)
    return sorted((f.site.path, f.site.line, f.code) for f in run.findings)


def test_a_parameter_copied_pinned_is_host_data_from_the_entry(tmp_path):
    assert helper_findings(tmp_path) == []


def test_a_parameter_rebound_before_the_copy_keeps_its_sync(tmp_path):
    # INVALID: the copy is of another value than the one `.item()` read
    helpers = HELPERS.replace("        mm_mask = is_multimodal.to(",
                              "        is_multimodal = is_multimodal[1:]\n        mm_mask = is_multimodal.to(")
    assert helpers != HELPERS
    found = helper_findings(tmp_path, helpers)
    assert ("pkg/mm/helpers.py", 5, "SYN201") in found and ("pkg/mm/model.py", 7, "SYN601") in found


def test_a_parameter_copied_to_the_cpu_keeps_its_sync(tmp_path):
    # INVALID: a copy to the host says the value was on the device
    helpers = HELPERS.replace("device=vision.device, non_blocking=True", '"cpu", non_blocking=True')
    assert helpers != HELPERS
    assert ("pkg/mm/helpers.py", 5, "SYN201") in helper_findings(tmp_path, helpers)


def test_a_blocking_copy_says_nothing(tmp_path):
    # INVALID: without non_blocking=True the copy may be of device memory
    helpers = HELPERS.replace(", non_blocking=True", "")
    assert helpers != HELPERS
    assert ("pkg/mm/helpers.py", 5, "SYN201") in helper_findings(tmp_path, helpers)


PAGES = """
    from typing import Optional
    import torch

    def new_pages(seq_lens: torch.Tensor, page_size: int, prefix_lens: Optional[torch.Tensor] = None) -> int:
        cpu_device = torch.device("cpu")
        assert seq_lens.device == cpu_device
        if prefix_lens is None:
            return (seq_lens % page_size == 1).int().sum().item()
        assert prefix_lens.device == cpu_device
        after = (seq_lens + page_size - 1) // page_size
        before = (prefix_lens + page_size - 1) // page_size
        return torch.sum(after - before).item()
"""

PAGES_CALLER = """
    import torch
    from .pages import new_pages

    class Model(torch.nn.Module):
        def forward(self, input_ids: torch.Tensor, seq_lens: torch.Tensor, prefix_lens: torch.Tensor):
            return new_pages(seq_lens, 16, prefix_lens)
"""


def pages_findings(tmp_path, pages=PAGES) -> list[tuple[str, int, str]]:
    run = lint_package(tmp_path, {"mem/pages.py": pages, "mem/model.py": PAGES_CALLER}, include_cold=True)
    return sorted((f.site.path, f.site.line, f.code) for f in run.findings)


def test_a_tensor_asserted_on_the_cpu_is_host_data(tmp_path):
    assert pages_findings(tmp_path) == []


def test_an_assert_after_the_sync_covers_the_parameter_from_the_entry(tmp_path):
    pages = PAGES.replace('''        assert seq_lens.device == cpu_device
        if prefix_lens is None:
            return (seq_lens % page_size == 1).int().sum().item()''', '''        n = (seq_lens % page_size == 1).int().sum().item()
        assert seq_lens.is_cpu and not seq_lens.is_cuda
        if prefix_lens is None:
            return n''')
    assert pages != PAGES
    assert pages_findings(tmp_path, pages) == []


def test_an_assert_of_the_gpu_keeps_the_sync(tmp_path):
    # INVALID: the assert says the tensor is on the device
    pages = PAGES.replace("assert seq_lens.device == cpu_device", "assert seq_lens.is_cuda")
    assert pages != PAGES
    # (the caller passes `prefix_lens`, so the sync under `if prefix_lens is None` is not its)
    assert ("pkg/mem/pages.py", 9, "SYN201") in pages_findings(tmp_path, pages)


def test_an_assert_of_another_device_keeps_the_sync(tmp_path):
    # INVALID: `x.device == dev` with `dev` not a host device says nothing
    pages = PAGES.replace('cpu_device = torch.device("cpu")', "cpu_device = seq_lens.device").replace(
        "assert seq_lens.device == cpu_device", "assert seq_lens.device == torch.device('cuda')")
    assert pages != PAGES
    assert ("pkg/mem/pages.py", 9, "SYN201") in pages_findings(tmp_path, pages)


MIXIN = """
    import torch

    class MultiModalFieldConfig:
        @staticmethod
        def batched(modality, keep_on_cpu=False):
            return (modality, keep_on_cpu)

    class OmniProcessor:
        def _get_mm_fields_config(self, hf_inputs):
            return {
                "pixel_values": MultiModalFieldConfig.batched("image"),
                "image_grid_thw": MultiModalFieldConfig.batched("image", keep_on_cpu=True),
            }

    class OmniMixin:
        def _process_image_input(self, image_input):
            grid_thw = image_input["image_grid_thw"]
            pixel_values = image_input["pixel_values"]
            return self.visual(pixel_values, grid_thw=grid_thw)
"""

TOWER_MODEL = """
    import torch
    from torch import nn
    from ..common.omni import OmniMixin, OmniProcessor

    class Tower(nn.Module):
        def forward(self, x: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
            sizes = grid_thw[:, 0].tolist()
            return x.split(sizes)

    class Model(nn.Module, OmniMixin):
        def __init__(self):
            super().__init__()
            self.visual = Tower()

        def embed_multimodal(self, **kwargs):
            return self._process_image_input(kwargs)

        def forward(self, input_ids: torch.Tensor, **kwargs):
            return self.embed_multimodal(**kwargs)
"""


def tower_findings(tmp_path, mixin=MIXIN, model=TOWER_MODEL) -> list[tuple[int, str]]:
    run = lint_package(tmp_path, {"common/omni.py": mixin, "omni3/model.py": model}, include_cold=True)
    return sorted((f.site.line, f.code) for f in run.findings if f.site.path == "pkg/omni3/model.py")


def test_a_mixin_call_feeds_the_tower_its_subclass_keeps(tmp_path):
    # the mixin keeps no `visual`: its call runs the `forward` of the subclass's tower
    assert tower_findings(tmp_path) == []


def test_a_mixin_call_with_device_data_keeps_the_sync(tmp_path):
    # INVALID: the mixin passes device data for the grid
    mixin = MIXIN.replace('grid_thw=grid_thw)', 'grid_thw=pixel_values)')
    assert mixin != MIXIN
    assert (8, "SYN202") in tower_findings(tmp_path, mixin)


def test_a_subclass_overriding_the_mixin_method_keeps_the_sync(tmp_path):
    # INVALID: the subclass does not run the mixin's call; its own passes device data
    model = TOWER_MODEL.replace('''        def embed_multimodal(self, **kwargs):''', '''        def _process_image_input(self, image_input):
            return self.visual(image_input["pixel_values"], grid_thw=image_input["pixel_values"])

        def embed_multimodal(self, **kwargs):''')
    assert model != TOWER_MODEL
    assert (8, "SYN202") in tower_findings(tmp_path, model=model)
