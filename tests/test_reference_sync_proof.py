"""syncscope proves the reference implementation: every naive builder syncs exactly at the lines
marked `# sync: <kind>` in reference_impl/ (and nowhere else), every fixed builder not at all.

Runs under `syncscope.trap()`: on a GPU machine with the real CUDA detector (`device="cuda"`),
elsewhere with the simulated CUDA device (`device="sim"`), with the builders' tensors on
"cuda" either way. Each scenario runs twice inside the trap, the first time as an allowed
warm-up (lazy initialisation, Triton compilation), and only the second run's events count.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import re  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import reference_impl  # noqa: E402
from reference_impl.common import ScheduledBatch, to_device  # noqa: E402

HAS_CUDA = torch.cuda.is_available()
TRAP_DEVICE = "cuda" if HAS_CUDA else "sim"
# The one guard: skip while the detector this machine needs does not exist yet.
_DETECTOR = ("syncscope.runtime.cuda", "CudaDetector") if HAS_CUDA else ("syncscope.runtime.sim", "SimulatedCudaDetector")
if not hasattr(pytest.importorskip(_DETECTOR[0]), _DETECTOR[1]):
    pytest.skip(f"{'.'.join(_DETECTOR)} does not exist yet", allow_module_level=True)
import syncscope  # noqa: E402

pytestmark = pytest.mark.gpu if HAS_CUDA else []

PACKAGE_DIR = Path(reference_impl.__file__).parent
MARKER = re.compile(r"#\s*sync:\s*([a-z_0-9]+)")
NUM_SPEC = 3


def marked_sites(module_file: str) -> set[tuple[str, int, str]]:
    """(file name, line, kind) of every `# sync: <kind>` comment in a reference_impl module."""
    lines = (PACKAGE_DIR / module_file).read_text().splitlines()
    return {(module_file, i, m.group(1)) for i, text in enumerate(lines, 1) if (m := MARKER.search(text))}


def observed_sites(events) -> set[tuple[str, int, str]]:
    """(file name, line, kind) of every counted event, wherever it is: the scenarios' own set-up
    lines must not sync either."""
    return {(Path(e.site.path).name, e.site.line, e.kind) for e in events if not e.allowed}


def run_trapped(scenario, impl: str):
    with syncscope.trap(device=TRAP_DEVICE) as t:
        with syncscope.allow_sync("warm-up: lazy init, Triton compilation"):
            scenario(impl)
        scenario(impl)
    return observed_sites(t.events)


# ----------------------------------------------------------------------------------- scenarios
def _batch() -> tuple[ScheduledBatch, np.ndarray]:
    """Two plain decodes, two spec decodes, three prefills (one of exactly two chunks)."""
    batch = ScheduledBatch(
        req_indices=np.array([5, 0, 3, 1, 2, 4, 6], np.int32),
        query_lens=np.array([1, 4, 1, 3, 70, 128, 9], np.int32),
        num_draft=np.array([0, 3, 0, 2, 0, 0, 0], np.int32),
    )
    return batch, np.array([17, 40, 3, 64, 0, 12, 100], np.int32)


def _common(device="cuda"):
    from reference_impl.seq_lens_upper_bound import make_common_metadata

    batch, num_computed = _batch()
    seq_lens = num_computed + batch.query_lens
    table = (torch.arange(8 * (NUM_SPEC + 1), dtype=torch.int32).reshape(8, NUM_SPEC + 1) * 5) % 97
    block_table = to_device(table.numpy()[batch.req_indices], device)
    return make_common_metadata(batch, to_device(seq_lens, device), seq_lens, block_table, device)


def gdn_spec_decode(impl):
    from reference_impl.gdn_spec_decode import GDNSpecDecodeMetadataBuilder

    common = _common()
    accepted = to_device(np.array([0, 2, 0, 1, 0, 0, 0], np.int32), "cuda")
    GDNSpecDecodeMetadataBuilder(NUM_SPEC, "cuda", impl).build(common, accepted)


def gdn_chunk_prefill(impl):
    from reference_impl.gdn_chunk_indices import GDNPrefillMetadataBuilder, gdn_chunk_prefill

    common = _common()
    meta = GDNPrefillMetadataBuilder("cuda", impl).build(common)
    g = torch.ones(int(meta.cu_seqlens_cpu[-1]), 4, device="cuda")
    for _layer in range(3):  # the naive per-tensor cache makes layers 2 and 3 free
        gdn_chunk_prefill(g, meta.cu_seqlens, chunk_indices=meta.chunk_indices, chunk_offsets=meta.chunk_offsets)


def chunked_context(impl):
    from reference_impl.seq_lens_upper_bound import ChunkedContextBuilder

    ChunkedContextBuilder(32, "cuda", impl).build(_common())


def trtllm_indptr(impl):
    from reference_impl.trtllm_indptr import TrtllmMetadataBuilder

    builder = TrtllmMetadataBuilder(16, 8, "cuda", impl)  # every part uses TRT-LLM
    builder.build(_common())


def async_spec_decode(impl):
    from reference_impl.async_spec_decode import InputPreparer

    batch, num_computed = _batch()
    prep = InputPreparer(8, 32, 16, "cuda", impl)
    for row, computed in zip(batch.req_indices, num_computed):
        prep.add_request(int(row), np.arange(32, dtype=np.int32) + 32 * int(row), int(computed))
    prep.commit_block_table()
    accepted = to_device(np.array([0, 2, 0, 1, 0, 0, 0], np.int32), "cuda")
    for _step in range(2):
        prep.prepare(batch, batch.num_tokens + 8)
        prep.finish(batch, accepted)


SCENARIOS = {
    # scenario: the marked lines its naive variant must sync at
    "gdn_spec_decode": (gdn_spec_decode, marked_sites("gdn_spec_decode.py")),
    "gdn_chunk_prefill": (gdn_chunk_prefill, marked_sites("gdn_chunk_indices.py")),
    "chunked_context": (chunked_context, marked_sites("seq_lens_upper_bound.py")),
    "trtllm_indptr": (trtllm_indptr, marked_sites("seq_lens_upper_bound.py")),
    "async_spec_decode": (async_spec_decode, marked_sites("async_spec_decode.py")),
}


def test_markers_are_where_the_docs_say():
    """A refactor that loses a marker would silently weaken the proofs below."""
    counts = {name: len(expected) for name, (_, expected) in SCENARIOS.items()}
    assert counts == {
        "gdn_spec_decode": 6,  # 5 boolean-mask indexes + repeat_interleave
        "gdn_chunk_prefill": 3,  # tolist + 2 pageable uploads
        "chunked_context": 1,  # the lazy seq_lens_cpu property
        "trtllm_indptr": 1,  # the same property, read by the narrow guard
        "async_spec_decode": 1,  # reading the accepted counts
    }
    kinds = {kind for _, (_, expected) in SCENARIOS.items() for _, _, kind in expected}
    known = {v for k, v in vars(syncscope.SyncKind).items() if k.isupper()}
    assert kinds <= known, kinds - known


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_naive_syncs_exactly_at_the_marked_lines(name):
    scenario, expected = SCENARIOS[name]
    observed = run_trapped(scenario, "naive")
    assert observed == expected, f"missing: {sorted(expected - observed)}; unexpected: {sorted(observed - expected)}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_fixed_does_not_sync(name):
    scenario, _ = SCENARIOS[name]
    assert run_trapped(scenario, "fixed") == set()
