"""Host-only multimodal fields reached through a spread tuple or declared in a loop (issue 24,
"host data taken for device data"; vLLM's dots3_note `embed_multimodal`, whose processor, in
another package, declares `fields[key] = MultiModalFieldConfig.batched("video",
keep_on_cpu=True)` for each key of a literal, and whose model passes them on as
`self._process_video_input(*video_inputs)` with `video_inputs = (kwargs.get(...), ...)`).

VALID: a helper fed the members of a spread tuple literal by position gets each member's place;
a loop over a literal of names declares each of them. INVALID: a spread of anything but a tuple
literal, a member that is not a host field, and a loop without `keep_on_cpu` keep the sync."""

from __future__ import annotations

from test_lint_scope import lint_package

PROCESSOR = """
    class MultiModalFieldConfig:
        @staticmethod
        def batched(modality, keep_on_cpu=False):
            return (modality, keep_on_cpu)

    class VideoProcessor:
        def _get_mm_fields_config(self, hf_inputs):
            fields = {}
            fields["pixels"] = MultiModalFieldConfig.batched("video")
            fields["orders"] = MultiModalFieldConfig.batched("video", keep_on_cpu=True)
            for key in ("frame_counts", "audio_counts"):
                fields[key] = MultiModalFieldConfig.batched("video", keep_on_cpu=True)
            return fields
"""

MODEL = """
    import torch
    from ..common.processor import VideoProcessor

    class Model(torch.nn.Module):
        def _process(self, pixels: torch.Tensor, order_ids: torch.Tensor, sizes: torch.Tensor):
            n = order_ids.tolist()
            return pixels.split(sizes.tolist()), n

        def embed_multimodal(self, **kwargs: object):
            inputs = (
                kwargs.get("pixels"),
                kwargs.get("orders"),
                kwargs.get("frame_counts"),
            )
            if all(isinstance(v, torch.Tensor) for v in inputs):
                return self._process(*inputs)
            return None

        def forward(self, input_ids: torch.Tensor, **kwargs: object):
            return self.embed_multimodal(**kwargs)
"""


def flagged(tmp_path, model=MODEL, processor=PROCESSOR) -> list[tuple[int, str]]:
    run = lint_package(tmp_path, {"common/processor.py": processor, "nvidia/model.py": model}, include_cold=True)
    return sorted((f.site.line, f.code) for f in run.findings if f.site.path == "pkg/nvidia/model.py")


def test_members_of_a_spread_tuple_feed_the_helper_by_position(tmp_path):
    assert flagged(tmp_path) == []


def test_a_spread_of_something_else_keeps_the_syncs(tmp_path):
    # INVALID: a list built at run time says nothing of what each position holds
    model = MODEL.replace("            inputs = (\n", "            inputs = list((\n").replace(
        '''                kwargs.get("frame_counts"),
            )''', '''                kwargs.get("frame_counts"),
            ))''')
    assert model != MODEL
    assert {line for line, _ in flagged(tmp_path, model)} >= {7, 8}


def test_a_member_that_is_no_host_field_keeps_its_sync(tmp_path):
    # INVALID: the device pixels come in the position of `orders`
    model = MODEL.replace('''                kwargs.get("orders"),''', '''                kwargs.get("pixels"),''')
    assert model != MODEL
    assert [line for line, _ in flagged(tmp_path, model) if line in (7, 8)] == [7]


def test_a_loop_over_names_declares_each_field(tmp_path):
    # the direct read of a field the loop declares is host data too
    model = MODEL.replace("return self._process(*inputs)",
                          'return self._process(*inputs), kwargs["audio_counts"].tolist()')
    assert model != MODEL
    assert flagged(tmp_path, model) == []


def test_a_loop_without_keep_on_cpu_declares_nothing_host(tmp_path):
    # INVALID: the loop's fields are left wherever the runner puts them
    processor = PROCESSOR.replace('''                fields[key] = MultiModalFieldConfig.batched("video", keep_on_cpu=True)''',
                                  '''                fields[key] = MultiModalFieldConfig.batched("video")''')
    assert processor != PROCESSOR
    assert [line for line, _ in flagged(tmp_path, processor=processor) if line in (7, 8)] == [8]
