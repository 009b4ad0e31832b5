"""Host data the linter took for device data (session 10, branch h-vhost).

1. A module that only host-side input processors construct (a class based on a Hugging Face
   feature extractor or processor: `[roots] input-processors`) runs in the input processor,
   once per request, not per step (modules.py `input_processor`): vLLM's Cohere-ASR
   `FilterbankFeatures`, built by `CohereASRFeatureExtractor(SequenceFeatureExtractor)`.
2. `triton.cdiv(x, n)` is `(x + n - 1) // n`: its result lives where `x` does, so a helper's
   `triton.cdiv(lens(cu_seqlens), n).tolist()` syncs only where a caller passes device data
   (vocabulary.PASS_THROUGH), also through a package re-exporting the module
   (`from vllm.triton_utils import triton`).

Small packages written into tmp_path, linted whole-program."""

from __future__ import annotations

from test_lint_scope import lint_package

FEATURES = """
    import torch
    from torch import nn
    from transformers.feature_extraction_sequence_utils import SequenceFeatureExtractor

    class Filterbank(nn.Module):
        def forward(self, x, seq_len):
            for i in range(x.shape[0]):
                x[i, : seq_len[i].item()] = 0
            return x

    class Shared(nn.Module):
        def forward(self, x, seq_len):
            return x[: seq_len.max().item()]

    class MyFeatureExtractor(SequenceFeatureExtractor):
        def __init__(self, device):
            self._device = device
            self.fb = Filterbank()
            self.shared = Shared()

        def __call__(self, raw, return_tensors=None):
            seq_len = torch.tensor([len(r) for r in raw]).to(self._device)
            return self.fb(torch.zeros(3, 4), seq_len)
"""

# a model that builds `Shared` too: a per-step module
MODEL = """
    from torch import nn
    from pkg.features import Shared

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.shared = Shared()

        def forward(self, x, seq_len):
            return self.shared(x, seq_len)
"""

# the same extractor, but the model builds the filterbank as well
MODEL_TOO = """
    from torch import nn
    from pkg.features import Filterbank

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fb = Filterbank()

        def forward(self, x, seq_len):
            return self.fb(x, seq_len)
"""


def lines_of(run, path: str) -> dict[int, str | None]:
    """line -> why it is cold (None: per step)."""
    return {f.site.line: f.cold for f in run.findings if f.site.path == path}


def test_a_module_only_an_input_processor_builds_runs_once_per_request(tmp_path):
    run = lint_package(tmp_path, {"features.py": FEATURES, "model.py": MODEL}, include_cold=True)
    found = lines_of(run, "pkg/features.py")
    # VALID (cold): the filterbank's `.item()` (line 9), built only by the feature extractor
    assert found.get(9) and "once per request" in found[9] and "built only by input processors" in found[9], found
    # INVALID (stays per step): `Shared`, which the model builds too (line 14)
    assert 14 in found and found[14] is None, found


def test_a_module_a_model_also_builds_stays_per_step(tmp_path):
    run = lint_package(tmp_path, {"features.py": FEATURES, "model.py": MODEL_TOO}, include_cold=True)
    found = lines_of(run, "pkg/features.py")
    # INVALID: the filterbank is also a submodule of the model, so its `forward` is a root
    assert 9 in found and found[9] is None, found


def test_a_class_named_like_an_extractor_without_the_library_base_is_no_input_processor(tmp_path):
    plain = FEATURES.replace("(SequenceFeatureExtractor)", "(nn.Module)")
    run = lint_package(tmp_path, {"features.py": plain, "model.py": MODEL}, include_cold=True)
    found = lines_of(run, "pkg/features.py")
    # INVALID: a module that builds the filterbank inside itself is no input processor
    assert 9 in found and found[9] is None, found


TRITON_UTILS = """
    import triton
"""

INDEX = """
    import torch
    from pkg.triton_utils import triton

    def prepare_lens(cu_seqlens: torch.Tensor) -> torch.Tensor:
        return cu_seqlens[1:] - cu_seqlens[:-1]

    def prepare_chunk_indices(cu_seqlens: torch.Tensor, chunk_size: int) -> list[int]:
        return triton.cdiv(prepare_lens(cu_seqlens), chunk_size).tolist()

    def chunk_counts(cu_seqlens: torch.Tensor, chunk_size: int) -> list[int]:
        return triton.cdiv(cu_seqlens, chunk_size).tolist()
"""

HOST_CALLER = """
    import torch
    from pkg.index import chunk_counts, prepare_chunk_indices

    class Builder:
        def build(self, query_lens_cpu: torch.Tensor):
            query_start_loc_cpu = torch.zeros(5, dtype=torch.int32)
            return (prepare_chunk_indices(query_start_loc_cpu, 64),
                    chunk_counts(query_start_loc_cpu, 64))
"""

DEVICE_CALLER = """
    import torch
    from pkg.index import chunk_counts, prepare_chunk_indices

    class Builder:
        def build(self, n: int):
            query_start_loc = torch.zeros(5, dtype=torch.int32, device="cuda")
            return (prepare_chunk_indices(query_start_loc, 64),
                    chunk_counts(query_start_loc, 64))
"""


def test_cdiv_of_host_data_passed_by_every_caller_is_no_sync(tmp_path):
    run = lint_package(tmp_path, {"triton_utils.py": TRITON_UTILS, "index.py": INDEX, "builder.py": HOST_CALLER},
                       include_cold=True)
    # VALID: every caller passes a CPU tensor, so neither helper's `.tolist()` nor the calls sync
    found = sorted((f.site.path, f.site.line) for f in run.findings)
    assert not [p for p in found if p[0] in ("pkg/builder.py",) or p == ("pkg/index.py", 12)], found
    # (the root on a helper's result, line 9, is still reported where it is written, as for
    # `prepare_lens(cu_seqlens).tolist()` without `cdiv`: only its callers are decided by what they pass)


def test_cdiv_of_device_data_still_syncs(tmp_path):
    run = lint_package(tmp_path, {"triton_utils.py": TRITON_UTILS, "index.py": INDEX, "builder.py": DEVICE_CALLER},
                       include_cold=True)
    found = {(f.site.path, f.site.line, f.code) for f in run.findings}
    # INVALID: a caller passing a CUDA tensor reaches both syncs
    assert ("pkg/builder.py", 8, "SYN601") in found, found
    assert ("pkg/builder.py", 9, "SYN601") in found, found
