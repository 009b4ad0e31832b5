"""The Triton kernels of reference_impl against their plain-torch references.

Without a GPU, Triton runs the kernels in its interpreter: TRITON_INTERPRET must be set before
`reference_impl.kernels` is imported (triton.jit picks the interpreter at decoration time), hence
the lines above the imports. On a GPU machine the variable is left alone, the CUDA cases compile
the kernels for real, and the CPU cases skip (Triton needs the interpreter for CPU tensors).
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from reference_impl import kernels as K  # noqa: E402
from reference_impl.gdn_chunk_indices import GDN_CHUNK_SIZE, prepare_chunk_indices, prepare_chunk_offsets  # noqa: E402

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param(
        "cuda",
        id="cuda",
        marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")],
    ),
]


@pytest.fixture(autouse=True)
def _triton_runs_here(request):
    device = request.node.callspec.params.get("device") if hasattr(request.node, "callspec") else None
    if device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("Triton runs CPU tensors only in its interpreter; the CUDA cases cover this machine")


def _cu_seqlens(lens):
    cu = np.zeros(len(lens) + 1, dtype=np.int32)
    np.cumsum(lens, out=cu[1:])
    return cu


# ---------------------------------------------------------------------------------- chunk cumsum
def _check_cumsum(lens, num_heads, device, chunk=GDN_CHUNK_SIZE):
    cu = _cu_seqlens(lens)
    g = torch.randn(int(cu[-1]), num_heads, device=device)
    cu_t = torch.from_numpy(cu).to(device)
    idx = torch.from_numpy(prepare_chunk_indices(cu, chunk)).to(device)
    got = K.chunk_local_cumsum(g, cu_t, idx, chunk)
    want = K.chunk_local_cumsum_reference(g, cu_t, chunk)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "lens",
    [
        [],  # empty batch
        [1],
        [1, 1, 1],  # length-1 sequences
        [64],
        [128, 64, 192],  # exact multiples of the chunk size
        [63, 65, 127, 129],  # one either side of a chunk boundary
        [1, 200, 1, 64, 3],
    ],
    ids=lambda v: "x".join(map(str, v)) or "empty",
)
@pytest.mark.parametrize("num_heads", [1, 3, 8])
def test_chunk_local_cumsum_edge_cases(lens, num_heads, device):
    _check_cumsum(lens, num_heads, device)


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=25, deadline=None)
@given(lens=st.lists(st.integers(1, 300), max_size=6), num_heads=st.integers(1, 6))
def test_chunk_local_cumsum_random(lens, num_heads, device):
    _check_cumsum(lens, num_heads, device)


def test_chunk_indices_and_offsets_by_hand():
    cu = _cu_seqlens([1, 64, 65, 128])
    assert prepare_chunk_indices(cu).tolist() == [[0, 0], [1, 0], [2, 0], [2, 1], [3, 0], [3, 1]]
    assert prepare_chunk_offsets(cu).tolist() == [0, 1, 2, 4, 6]
    empty = _cu_seqlens([])
    assert prepare_chunk_indices(empty).shape == (0, 2)
    assert prepare_chunk_offsets(empty).tolist() == [0]


# ---------------------------------------------------------------------------------- slot mapping
def _check_slot_mapping(query_lens, num_computed, block_size, pad, device, max_reqs=16):
    rng = np.random.default_rng(len(query_lens) * 1000 + block_size)
    n = len(query_lens)
    rows = rng.permutation(max_reqs)[:n].astype(np.int32)
    seq_lens = np.asarray(num_computed, dtype=np.int64) + np.asarray(query_lens, dtype=np.int64)
    max_blocks = max(1, int(-(-seq_lens.max() // block_size))) if n else 1
    block_table = torch.from_numpy(rng.integers(0, 10_000, (max_reqs, max_blocks + 1)).astype(np.int32)).to(device)
    qsl = torch.from_numpy(_cu_seqlens(np.asarray(query_lens, dtype=np.int32))).to(device)
    positions = torch.cat(
        [torch.arange(c, c + q, dtype=torch.int64) for c, q in zip(num_computed, query_lens)]
        or [torch.zeros(0, dtype=torch.int64)]
    ).to(device)
    req = torch.from_numpy(rows).to(device)
    padded = int(sum(query_lens)) + pad
    got = K.compute_slot_mapping(positions, qsl, req, block_table, block_size, padded)
    want = K.compute_slot_mapping_reference(positions, qsl, req, block_table, block_size, padded)
    assert torch.equal(got, want)
    assert (got[int(sum(query_lens)) :] == K.PAD_SLOT_ID).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "query_lens,num_computed,block_size,pad",
    [
        ([], [], 16, 0),  # empty batch
        ([], [], 16, 5),  # nothing but padding
        ([1], [0], 16, 0),
        ([1, 1, 1], [15, 16, 17], 16, 3),  # either side of a page boundary
        ([16], [0], 16, 0),  # exactly one page
        ([4, 300], [12, 0], 16, 200),  # a query across many pages, more than one BLOCK of tokens
        ([3, 129], [62, 63], 64, 1),
    ],
)
def test_slot_mapping_edge_cases(query_lens, num_computed, block_size, pad, device):
    _check_slot_mapping(query_lens, num_computed, block_size, pad, device)


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=25, deadline=None)
@given(
    reqs=st.lists(st.tuples(st.integers(1, 200), st.integers(0, 300)), max_size=8),
    block_size=st.sampled_from([1, 16, 32]),
    pad=st.integers(0, 40),
)
def test_slot_mapping_random(reqs, block_size, pad, device):
    _check_slot_mapping([q for q, _ in reqs], [c for _, c in reqs], block_size, pad, device)


# ---------------------------------------------------------------------- num_computed correction
@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=25, deadline=None)
@given(data=st.data(), n=st.integers(0, 300))
def test_correct_num_computed_tokens(data, n, device):
    max_reqs = 320
    rows = data.draw(st.permutations(range(max_reqs)))[:n]
    drafts = data.draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    accepted = [data.draw(st.integers(0, d)) for d in drafts]
    scheduled = [d + 1 for d in drafts]
    args = [torch.tensor(v, dtype=torch.int32, device=device).reshape(-1) for v in (rows, scheduled, drafts, accepted)]
    start = torch.randint(0, 1000, (max_reqs,), dtype=torch.int32, device=device)
    got, want = start.clone(), start.clone()
    K.correct_num_computed_tokens(got, *args)
    K.correct_num_computed_tokens_reference(want, *args)
    assert torch.equal(got, want)
