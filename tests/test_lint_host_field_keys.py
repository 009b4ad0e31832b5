"""A host-only multimodal field stored under another key of a typed dict (field_keys.py; vLLM
0.33.0 ultravox.py: `num_chunks=audio_num_chunks`, then `audio_input["num_chunks"].tolist()`).
Each VALID source has an INVALID twin that stays reported: the runner moves every field not
declared `keep_on_cpu` to the device (`token_len=audio_token_len`)."""

from __future__ import annotations

from test_lint_host_facts import INPUTS, lint_package, where

MODEL = """
import torch
from pkg.inputs import MultiModalFieldConfig

class AudioMultiModalProcessor:
    def _get_mm_fields_config(self, hf_inputs):
        return dict(audio_num_chunks=MultiModalFieldConfig.batched("audio", keep_on_cpu=True),
                    audio_token_len=MultiModalFieldConfig.batched("audio"))

class AudioFeatureInputs(dict):
    pass

class Model(torch.nn.Module):
    def _parse(self, **kwargs):
        audio_num_chunks = kwargs.pop("audio_num_chunks", None)
        audio_token_len = kwargs.pop("audio_token_len", None)
        REBIND
        return AudioFeatureInputs(type="audio_features", num_chunks=audio_num_chunks,
                                  token_len=audio_token_len)

    def _process(self, audio_input):
        chunks = audio_input["num_chunks"].tolist()
        lens = audio_input["token_len"].tolist()
        return chunks, lens

    def embed_multimodal(self, **kwargs):
        return self._process(self._parse(**kwargs))
"""


def lint(tmp_path, rebind: str = "pass"):
    source = MODEL.replace("REBIND", rebind)
    found = where(lint_package(tmp_path, {"inputs.py": INPUTS, "model.py": source}))
    lines = source.splitlines()
    return {lines[line - 1].strip().split(" = ")[0] for path, line, code in found if code == "SYN202"}


def test_a_key_filled_with_a_host_only_field_is_host_data(tmp_path):
    assert "chunks" not in lint(tmp_path)


def test_a_key_filled_with_a_field_moved_to_the_device_is_flagged(tmp_path):
    assert "lens" in lint(tmp_path)


def test_a_key_filled_with_a_device_copy_of_the_field_is_flagged(tmp_path):
    assert "chunks" in lint(tmp_path, "audio_num_chunks = audio_num_chunks.to('cuda')")


def test_a_key_another_construction_fills_with_device_data_is_flagged(tmp_path):
    rebind = "other = AudioFeatureInputs(num_chunks=torch.ones(2, device='cuda'))"
    assert "chunks" in lint(tmp_path, rebind)


ROWS = """
import torch
from typing import Any
from pkg.inputs import MultiModalFieldConfig

class OcrMultiModalProcessor:
    def _get_mm_fields_config(self, hf_inputs):
        return dict(images_spatial_crop=MultiModalFieldConfig.batched("image"FLAG))

class Model(torch.nn.Module):
    def _num_tokens(self, image_spatial_crop: torch.Tensor | None = None) -> int:
        if image_spatial_crop is not None and image_spatial_crop[0] > 1:
            return 2
        return 1

    def forward(self, mm_kwargs: dict[str, Any]):
        out = []
        for crop in mm_kwargs["images_spatial_crop"]:
            out.append(self._num_tokens(crop))
        for row in mm_kwargs.get("images_spatial_crop"):
            out.append(self._num_tokens(row))
        return out
"""


def test_the_rows_of_a_host_only_field_are_host_data(tmp_path):
    # vLLM 0.33.0 deepseek_ocr.py: `for image_spatial_crop in mm_kwargs["images_spatial_crop"]:`
    source = ROWS.replace("FLAG", ", keep_on_cpu=True")
    assert where(lint_package(tmp_path, {"inputs.py": INPUTS, "model.py": source})) == []


def test_the_rows_of_a_field_moved_to_the_device_are_flagged(tmp_path):
    source = ROWS.replace("FLAG", "")
    assert "SYN206" in [code for _, _, code in where(lint_package(tmp_path, {"inputs.py": INPUTS, "model.py": source}))]


def test_a_key_filled_through_a_local_holding_the_field_is_host_data(tmp_path):
    # vLLM 0.33.0 molmo2.py: `num_pooled_patches = kwargs.pop("image_num_pooled_patches")`, then
    # `Molmo2ImageInputs(num_pooled_patches=num_pooled_patches)`
    source = MODEL.replace("REBIND", "pass").replace(
        'audio_num_chunks = kwargs.pop("audio_num_chunks", None)', 'chunks = kwargs.pop("audio_num_chunks", None)').replace(
        "num_chunks=audio_num_chunks", "num_chunks=chunks")
    found = where(lint_package(tmp_path, {"inputs.py": INPUTS, "model.py": source}))
    lines = source.splitlines()
    flagged = {lines[line - 1].strip().split(" = ")[0] for _, line, code in found if code == "SYN202"}
    assert flagged == {"lens"}


def test_a_host_rebind_of_the_field_s_local_keeps_it_host_data(tmp_path):
    # vLLM 0.33.0 nano_nemotron_vl.py: the processor's `image_num_patches = image_num_patches.tolist()`
    assert "chunks" not in lint(tmp_path, "audio_num_chunks = audio_num_chunks.tolist()")
