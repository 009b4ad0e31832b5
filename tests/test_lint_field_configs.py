"""Multimodal fields kept on the CPU by a processor of another module (field_configs.py; vLLM
0.33.0 qwen3_omni_moe_thinker.py subclasses qwen2_5_omni_thinker's processor, nemotron_vl.py
registers internvl's). Each VALID package has an INVALID twin that stays reported."""

from __future__ import annotations

from test_lint_host_facts import INPUTS, lint_package, where

# The model of another module: its processor declares the fields, keep_on_cpu or not.
def base(keep_on_cpu: bool) -> str:
    flag = ", keep_on_cpu=True" if keep_on_cpu else ""
    return f"""
        from pkg.inputs import MultiModalFieldConfig

        class BaseMultiModalProcessor:
            pass

        class OmniMultiModalProcessor(BaseMultiModalProcessor):
            def _get_mm_fields_config(self, hf_inputs):
                return dict(image_grid_thw=MultiModalFieldConfig.batched("image"{flag}))

        class OmniVisionTower:
            pass
    """


# A model reusing that processor (`uses`: the lines that take it over) and reading the field.
def model(uses: str, own_config: str = "", imports: str = "OmniMultiModalProcessor") -> str:
    return f"""
        import torch
        from pkg.inputs import MultiModalFieldConfig
        from pkg.omni import {imports}

        {uses}

        class NewModel(torch.nn.Module):
            {own_config}
            def embed_multimodal(self, **kwargs):
                grid_thw = kwargs.pop("image_grid_thw")
                return grid_thw.prod(-1).tolist()
    """


SUBCLASS = "class NewMultiModalProcessor(OmniMultiModalProcessor):\n            pass"
REGISTERED = "REGISTRY = dict(processor=OmniMultiModalProcessor)"
TOWER_ONLY = "class NewTower(OmniVisionTower):\n            pass"


def line_of(source: str, text: str = ".tolist()") -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def lint(tmp_path, model_source: str, keep_on_cpu: bool = True, extra: dict | None = None):
    files = {"inputs.py": INPUTS, "omni.py": base(keep_on_cpu), "model.py": model_source, **(extra or {})}
    return where(lint_package(tmp_path, files))


def test_a_field_kept_on_the_cpu_by_a_subclassed_processor_is_host_data(tmp_path):
    assert lint(tmp_path, model(SUBCLASS)) == []


def test_a_field_kept_on_the_cpu_by_an_imported_processor_is_host_data(tmp_path):
    # nemotron_vl.py: `@register_processor(BaseInternVLMultiModalProcessor[...], ...)`
    assert lint(tmp_path, model(REGISTERED)) == []


def test_the_processor_of_a_processor_brings_its_fields_too(tmp_path):
    middle = """
        from pkg.omni import OmniMultiModalProcessor

        class MiddleMultiModalProcessor(OmniMultiModalProcessor):
            pass
    """
    source = model(SUBCLASS).replace("from pkg.omni import OmniMultiModalProcessor",
                                     "from pkg.middle import MiddleMultiModalProcessor as OmniMultiModalProcessor")
    assert lint(tmp_path, source, extra={"middle.py": middle}) == []


def test_the_same_field_not_kept_on_the_cpu_by_the_processor_is_flagged(tmp_path):
    source = model(SUBCLASS)
    assert ("pkg/model.py", line_of(source), "SYN202") in lint(tmp_path, source, keep_on_cpu=False)


def test_a_field_the_model_declares_again_without_keep_on_cpu_is_flagged(tmp_path):
    own = ("def _get_mm_fields_config(self, hf_inputs):\n"
           "                return dict(image_grid_thw=MultiModalFieldConfig.batched(\"image\"))\n")
    source = model(SUBCLASS, own_config=own)
    assert ("pkg/model.py", line_of(source), "SYN202") in lint(tmp_path, source)


def test_a_model_that_takes_only_another_class_of_that_module_is_flagged(tmp_path):
    # a vision tower of the other module is no processor: its fields are not this model's
    source = model(TOWER_ONLY, imports="OmniVisionTower")
    assert ("pkg/model.py", line_of(source), "SYN202") in lint(tmp_path, source)


def test_a_warm_cache_keeps_the_inherited_fields_and_a_changed_processor_drops_them(tmp_path):
    import textwrap

    from syncscope.lint.engine import lint_paths
    from lint_helpers import make_config

    source = model(SUBCLASS)
    root = tmp_path / "pkg"
    root.mkdir()
    for name, text in {"__init__.py": "", "inputs.py": INPUTS, "omni.py": base(True), "model.py": source}.items():
        (root / name).write_text(textwrap.dedent(text))
    config = make_config(tmp_path, include_cold=False)
    assert where(lint_paths([str(root)], config, jobs=1)) == []
    assert where(lint_paths([str(root)], config, jobs=1)) == []  # from the cache
    (root / "omni.py").write_text(textwrap.dedent(base(False)) + "\n")  # no longer kept on the CPU
    assert ("pkg/model.py", line_of(source), "SYN202") in where(lint_paths([str(root)], config, jobs=1))


def test_a_field_declared_by_subscript_assignment_is_host_data(tmp_path):
    # vLLM 0.33.0 mimo_v2_omni.py: `fields["video_audio_seg_lens"] = MultiModalFieldConfig.batched(
    # "video", keep_on_cpu=True)`, then `video_audio_seg_lens[i][:n].tolist()` in the model
    def module(flag: str) -> str:
        return f"""
            import torch
            from pkg.inputs import MultiModalFieldConfig

            class OwnMultiModalProcessor:
                def _get_mm_fields_config(self, hf_inputs):
                    fields = {{}}
                    fields["seg_lens"] = MultiModalFieldConfig.batched("video"{flag})
                    return fields

            class Model(torch.nn.Module):
                def embed_multimodal(self, **kwargs):
                    seg_lens = kwargs.pop("seg_lens", None)
                    return seg_lens[0][:2].tolist()
        """
    (tmp_path / "kept").mkdir()
    (tmp_path / "plain").mkdir()
    assert where(lint_package(tmp_path / "kept", {"inputs.py": INPUTS, "m.py": module(", keep_on_cpu=True")})) == []
    source = module("")
    found = where(lint_package(tmp_path / "plain", {"inputs.py": INPUTS, "m.py": source}))
    assert ("pkg/m.py", line_of(source), "SYN202") in found


def test_a_device_copy_of_a_host_field_under_the_field_s_name_is_on_the_device(tmp_path):
    # vLLM 0.33.0 qwen3_omni_moe_thinker.py `_process_audio_input`: `audio_feature_lengths =
    # async_tensor_h2d(audio_input["audio_feature_lengths"], ...)`, then `.tolist()` of lengths
    # computed from it: a real sync, although the key is a host-only field (inherited)
    source = model(SUBCLASS).replace(
        'grid_thw = kwargs.pop("image_grid_thw")',
        'image_grid_thw = async_tensor_h2d(kwargs.pop("image_grid_thw"), "cuda")\n'
        '                grid_thw = _lengths(image_grid_thw)').replace(
        "import torch\n", "import torch\n        from pkg.utils import async_tensor_h2d\n\n"
        "        def _lengths(t: torch.Tensor):\n            return (t - 1) // 2 + 1\n", 1)
    utils = "import torch\n\ndef async_tensor_h2d(x, device):\n    return torch.as_tensor(x).to(device, non_blocking=True)\n"
    assert ("pkg/model.py", line_of(source), "SYN202") in lint(tmp_path, source, extra={"utils.py": utils})


def factory_module(keep_on_cpu: bool) -> str:
    # vLLM 0.33.0 qwen2_vl.py `_create_qwen2vl_field_factory`: a function returning the field
    # config function, called by other models' processors (glm4_1v.py)
    flag = ", keep_on_cpu=True" if keep_on_cpu else ""
    return f"""
        from pkg.inputs import MultiModalFieldConfig

        def _create_field_factory(merge_size):
            def _field_config(hf_inputs):
                return dict(image_grid_thw=MultiModalFieldConfig.batched("image"{flag}))
            return _field_config
    """


FACTORY_USER = """
    import torch
    from pkg.factory import _create_field_factory

    class GlmMultiModalProcessor:
        def _get_mm_fields_config(self, hf_inputs, kwargs):
            return _create_field_factory(2)(hf_inputs)

    class Model(torch.nn.Module):
        def embed_multimodal(self, **kwargs):
            grid_thw = kwargs.pop("image_grid_thw")
            return grid_thw.prod(-1).tolist()
"""


def test_a_field_kept_on_the_cpu_by_a_field_config_factory_is_host_data(tmp_path):
    files = {"inputs.py": INPUTS, "factory.py": factory_module(True), "model.py": FACTORY_USER}
    assert where(lint_package(tmp_path, files)) == []


def test_a_field_a_factory_does_not_keep_on_the_cpu_is_flagged(tmp_path):
    files = {"inputs.py": INPUTS, "factory.py": factory_module(False), "model.py": FACTORY_USER}
    assert ("pkg/model.py", line_of(FACTORY_USER), "SYN202") in where(lint_package(tmp_path, files))
