"""Naive and fixed builders of reference_impl give equal outputs on randomized batches.

CPU cases run everywhere (Triton through its interpreter, see test_reference_kernels.py); CUDA
cases are marked `gpu` and skip without a device. The upper-bound invariant of PR 40654 (never
below the true length) is checked on random multi-step histories.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import dataclasses  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from reference_impl.async_spec_decode import InputPreparer  # noqa: E402
from reference_impl.common import ScheduledBatch, to_device  # noqa: E402
from reference_impl.gdn_chunk_indices import GDNPrefillMetadataBuilder, gdn_chunk_prefill  # noqa: E402
from reference_impl.gdn_spec_decode import GDNSpecDecodeMetadataBuilder  # noqa: E402
from reference_impl.seq_lens_upper_bound import (  # noqa: E402
    ChunkedContextBuilder,
    HostSeqLenMirror,
    make_common_metadata,
)
from reference_impl.trtllm_indptr import TrtllmMetadataBuilder  # noqa: E402

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param(
        "cuda",
        id="cuda",
        marks=[pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")],
    ),
]
MAX_ROWS = 24
NUM_SPEC = 3  # drafts per spec-decode request at most
SETTINGS = settings(max_examples=30, deadline=None)


def skip_unless_triton_runs(device: str) -> None:
    if device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        pytest.skip("Triton runs CPU tensors only in its interpreter; the CUDA cases cover this machine")


@st.composite
def batches(draw, max_reqs: int = 10):
    """A scheduled batch (decodes, some with drafts, then prefills) and exact num_computed."""
    decodes = draw(
        st.lists(st.tuples(st.integers(0, NUM_SPEC), st.integers(1, 400)), max_size=max_reqs)
    )  # (drafts, num_computed)
    prefill_len = st.one_of(st.integers(2, 300), st.sampled_from([64, 128, 192]))
    prefills = draw(
        st.lists(st.tuples(prefill_len, st.integers(0, 300)), max_size=max_reqs - len(decodes))
    )  # (query_len, num_computed)
    rows = draw(st.permutations(range(MAX_ROWS)))[: len(decodes) + len(prefills)]
    batch = ScheduledBatch(
        req_indices=np.asarray(rows, dtype=np.int32),
        query_lens=np.asarray([d + 1 for d, _ in decodes] + [q for q, _ in prefills], dtype=np.int32),
        num_draft=np.asarray([d for d, _ in decodes] + [0] * len(prefills), dtype=np.int32),
    )
    num_computed = np.asarray([c for _, c in decodes] + [c for _, c in prefills], dtype=np.int32)
    return batch, num_computed


def common_metadata(batch, num_computed, device, *, pending_rejections=None, width=NUM_SPEC + 1):
    """Metadata with exact device seq_lens; the host bound exceeds them by `pending_rejections`."""
    seq_lens = (num_computed + batch.query_lens).astype(np.int32)
    upper = seq_lens if pending_rejections is None else seq_lens + pending_rejections
    table = torch.arange(MAX_ROWS * width, dtype=torch.int32).reshape(MAX_ROWS, width) * 7 % 1009
    block_table = table[torch.from_numpy(batch.req_indices).long()].to(device)
    return make_common_metadata(batch, to_device(seq_lens, device), upper, block_table, device)


def assert_same(a, b, path="") -> None:
    """Equal dataclasses: tensors equal in dtype, shape and values; everything else ==."""
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            if not f.name.startswith("_"):
                assert_same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), path
        assert a.dtype == b.dtype and a.shape == b.shape, (path, a, b)
        assert torch.equal(a.cpu(), b.cpu()), (path, a, b)
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=path)
    else:
        assert a == b, (path, a, b)


# ------------------------------------------------------------------- PR 38047 GDN spec decode
@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(data=batches(), seed=st.integers(0, 2**16))
def test_gdn_spec_decode_naive_equals_fixed(data, seed, device):
    batch, num_computed = data
    common = common_metadata(batch, num_computed, device)
    gen = torch.Generator().manual_seed(seed)
    accepted = (torch.randint(0, NUM_SPEC + 1, (batch.num_reqs,), generator=gen, dtype=torch.int32)).to(device)
    naive = GDNSpecDecodeMetadataBuilder(NUM_SPEC, device, "naive").build(common, accepted)
    fixed = GDNSpecDecodeMetadataBuilder(NUM_SPEC, device, "fixed").build(common, accepted)
    assert_same(naive, fixed)
    # And it is the right split: spec tokens are exactly the tokens of requests with drafts.
    spec_rows = np.repeat(batch.num_draft > 0, batch.query_lens)
    assert fixed.spec_token_indices.cpu().tolist() == np.flatnonzero(spec_rows).tolist()
    assert fixed.non_spec_token_indices.cpu().tolist() == np.flatnonzero(~spec_rows).tolist()


# ---------------------------------------------------------------- PR 38361 GDN chunk indices
@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(data=batches(), num_heads=st.integers(1, 4))
def test_gdn_chunk_prefill_naive_equals_fixed(data, num_heads, device):
    skip_unless_triton_runs(device)
    batch, num_computed = data
    common = common_metadata(batch, num_computed, device)
    naive = GDNPrefillMetadataBuilder(device, "naive").build(common)
    fixed = GDNPrefillMetadataBuilder(device, "fixed").build(common)
    assert naive.chunk_indices is None and naive.chunk_offsets is None
    assert_same(naive.cu_seqlens, fixed.cu_seqlens)
    if batch.num_prefills == 0:
        assert fixed.chunk_indices is None  # nothing to run: the layer skips the prefill kernels
        return
    g = torch.randn(int(batch.query_lens[batch.is_prefill].sum()), num_heads, device=device)
    cum_naive, decay_naive = gdn_chunk_prefill(g, naive.cu_seqlens)
    cum_fixed, decay_fixed = gdn_chunk_prefill(
        g, fixed.cu_seqlens, chunk_indices=fixed.chunk_indices, chunk_offsets=fixed.chunk_offsets
    )
    assert_same(cum_naive, cum_fixed)
    assert_same(decay_naive, decay_fixed)
    # The per-sequence decay is the sum of g over the sequence.
    bounds = fixed.cu_seqlens_cpu.tolist()
    want = torch.stack([g[a:b].sum(0) for a, b in zip(bounds[:-1], bounds[1:])])
    torch.testing.assert_close(decay_fixed, want, rtol=1e-4, atol=1e-3)


# ------------------------------------------------------------ PR 40654 seq_lens upper bound
@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(data=batches(), chunk_tokens=st.sampled_from([16, 100, 4096]))
def test_chunked_context_naive_equals_fixed_when_the_mirror_is_exact(data, chunk_tokens, device):
    batch, num_computed = data
    common = common_metadata(batch, num_computed, device)
    naive = ChunkedContextBuilder(chunk_tokens, device, "naive").build(common)
    fixed = ChunkedContextBuilder(chunk_tokens, device, "fixed").build(common)
    assert_same(naive, fixed)


@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(data=batches(), chunk_tokens=st.sampled_from([16, 100]), extra=st.data())
def test_chunked_context_from_the_bound_is_never_smaller(data, chunk_tokens, extra, device):
    batch, num_computed = data
    pending = np.asarray(extra.draw(st.lists(st.integers(0, NUM_SPEC), min_size=batch.num_reqs, max_size=batch.num_reqs)), dtype=np.int32)
    common = common_metadata(batch, num_computed, device, pending_rejections=pending)
    naive = ChunkedContextBuilder(chunk_tokens, device, "naive").build(common)
    fixed = ChunkedContextBuilder(chunk_tokens, device, "fixed").build(common)
    assert fixed.max_seq_len >= naive.max_seq_len
    assert fixed.workspace_tokens >= naive.workspace_tokens
    assert fixed.num_chunks >= naive.num_chunks
    assert (fixed.context_lens.cpu() >= naive.context_lens.cpu()).all()


@SETTINGS
@given(
    steps=st.lists(
        st.lists(st.tuples(st.integers(0, NUM_SPEC), st.integers(0, NUM_SPEC), st.integers(0, 3)), min_size=1, max_size=6),
        min_size=1,
        max_size=12,
    )
)
def test_upper_bound_never_below_the_true_length(steps):
    """Random histories of spec-decode steps: each request schedules 1 + d tokens, the verifier
    accepts some, and the host learns the rejected count `lag` steps later (3 = never within the
    history). The host bound is >= the truth after every step, and equal once nothing is pending."""
    max_reqs = 6
    mirror = HostSeqLenMirror(max_reqs)
    truth = np.zeros(max_reqs, dtype=np.int64)
    pending: list[tuple[int, int, int]] = []  # (due step, row, rejected drafts)
    for t, reqs in enumerate(steps):
        rows = np.arange(len(reqs), dtype=np.int32)
        drafts = np.asarray([d for d, _, _ in reqs], dtype=np.int32)
        accepted = np.minimum([a for _, a, _ in reqs], drafts).astype(np.int32)
        batch = ScheduledBatch(rows, drafts + 1, drafts)
        bound = mirror.upper_bound(batch)
        assert (bound >= truth[rows] + batch.query_lens).all()
        truth[rows] += 1 + accepted
        mirror.advance(batch)
        for row, lag in zip(rows, [lag for _, _, lag in reqs]):
            due = t + lag if lag < 3 else len(steps)  # 3: learned only after the history
            pending.append((due, int(row), int(drafts[row] - accepted[row])))
        due_now = [p for p in pending if p[0] <= t]
        pending = [p for p in pending if p[0] > t]
        for _, row, rejected in due_now:
            mirror.correct(np.asarray([row]), np.asarray([rejected]))
        assert (mirror.num_computed_tokens_np >= truth).all()
    for _, row, rejected in pending:
        mirror.correct(np.asarray([row]), np.asarray([rejected]))
    assert (mirror.num_computed_tokens_np == truth).all()


# ------------------------------------------------------------ PR 39546 TRT-LLM paged_kv_indptr
@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(
    steps=st.lists(batches(), min_size=1, max_size=3),
    page_size=st.sampled_from([1, 16, 64]),
    prefill_use_trtllm=st.booleans(),
    decode_use_trtllm=st.booleans(),
    use_cascade=st.booleans(),
)
def test_trtllm_indptr_naive_equals_fixed(steps, page_size, prefill_use_trtllm, decode_use_trtllm, use_cascade, device):
    flags = dict(prefill_use_trtllm=prefill_use_trtllm, decode_use_trtllm=decode_use_trtllm, use_cascade=use_cascade)
    # Several steps on the same builders: the persistent buffer must not leak an earlier step
    # (the prefill offsets start where an earlier step may have left a nonzero offset).
    naive_builder = TrtllmMetadataBuilder(page_size, 16, device, "naive", **flags)
    fixed_builder = TrtllmMetadataBuilder(page_size, 16, device, "fixed", **flags)
    for batch, num_computed in steps:
        common = common_metadata(batch, num_computed, device)
        naive = naive_builder.build(common)
        fixed = fixed_builder.build(common)
        assert_same(naive.paged_kv_indptr, fixed.paged_kv_indptr)
        seq_lens = num_computed + batch.query_lens
        pages = -(-seq_lens[batch.num_decodes :] // page_size)
        assert fixed.paged_kv_indptr.cpu().tolist() == [0] + np.cumsum(pages).tolist()
        all_trtllm = (batch.num_prefills == 0 or prefill_use_trtllm) and (batch.num_decodes == 0 or decode_use_trtllm)
        assert fixed.used_host_path == (use_cascade or not all_trtllm)


def test_trtllm_page_boundary():
    """seq_len 16, 17 and 32 with 16-token pages: 1, 2 and 2 pages."""
    batch = ScheduledBatch(np.arange(3, dtype=np.int32), np.array([16, 17, 32], np.int32), np.zeros(3, np.int32))
    common = common_metadata(batch, np.zeros(3, np.int32), "cpu")
    for impl in ("naive", "fixed"):
        assert TrtllmMetadataBuilder(16, 4, "cpu", impl).build(common).paged_kv_indptr.tolist() == [0, 1, 3, 5]


def test_trtllm_device_path_overwrites_the_stale_offset():
    """Step 1 puts prefill offsets at buffer positions 1..4; step 2's prefills start at position 3,
    which holds step 1's nonzero offset until the fixed builder zeroes it."""
    fixed = TrtllmMetadataBuilder(16, 8, "cpu", "fixed")
    one = ScheduledBatch(np.arange(4, dtype=np.int32), np.array([1, 40, 40, 40], np.int32), np.zeros(4, np.int32))
    two = ScheduledBatch(np.arange(4, dtype=np.int32), np.array([1, 1, 1, 40], np.int32), np.zeros(4, np.int32))
    fixed.build(common_metadata(one, np.full(4, 10, np.int32), "cpu"))
    assert fixed.paged_kv_indptr[3].item() != 0
    got = fixed.build(common_metadata(two, np.full(4, 10, np.int32), "cpu"))
    assert not got.used_host_path
    assert got.paged_kv_indptr.tolist() == [0, 4]


# ------------------------------------------------------- PR 32951 zero-bubble async spec decode
@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(
    steps=st.lists(st.lists(st.tuples(st.integers(0, NUM_SPEC), st.integers(0, NUM_SPEC)), min_size=1, max_size=6), min_size=1, max_size=6),
    prompt_lens=st.lists(st.integers(2, 150), min_size=6, max_size=6),
    block_size=st.sampled_from([4, 16]),
    pad=st.integers(0, 8),
)
def test_async_spec_decode_naive_equals_fixed(steps, prompt_lens, block_size, pad, device):
    """A prefill step for 6 requests, then decode steps with random drafts and acceptance: both
    preparers give the same positions, slots and seq_lens every step, and the fixed device
    num_computed_tokens equals the naive exact host counts while the fixed mirror stays >= them."""
    skip_unless_triton_runs(device)
    max_reqs, max_blocks = 8, 128
    rng = np.random.default_rng(sum(prompt_lens))
    rows = rng.permutation(max_reqs)[:6].astype(np.int32)
    preparers = {impl: InputPreparer(max_reqs, max_blocks, block_size, device, impl) for impl in ("naive", "fixed")}
    for row in rows:
        blocks = rng.permutation(10_000)[:max_blocks].astype(np.int32)
        for p in preparers.values():
            p.add_request(int(row), blocks)
    for p in preparers.values():
        p.commit_block_table()
    schedule = [ScheduledBatch(rows, np.asarray(prompt_lens, np.int32), np.zeros(6, np.int32))]
    accepted_per_step = [np.zeros(6, np.int32)]
    for step in steps:
        n = len(step)
        drafts = np.asarray([d for d, _ in step], np.int32)
        schedule.append(ScheduledBatch(rows[:n], drafts + 1, drafts))
        accepted_per_step.append(np.minimum([a for _, a in step], drafts).astype(np.int32))
    for batch, accepted in zip(schedule, accepted_per_step):
        naive = preparers["naive"].prepare(batch, batch.num_tokens + pad)
        fixed = preparers["fixed"].prepare(batch, batch.num_tokens + pad)
        for name in ("positions", "slot_mapping", "seq_lens", "query_start_loc"):
            assert_same(getattr(naive, name), getattr(fixed, name), name)
        assert (fixed.seq_lens_cpu_upper_bound >= naive.seq_lens_cpu_upper_bound).all()
        acc = torch.from_numpy(accepted).to(device)
        for p in preparers.values():
            p.finish(batch, acc)
    exact = preparers["naive"].mirror.num_computed_tokens_np
    assert preparers["fixed"].num_computed.cpu().tolist() == exact.tolist()
    assert (preparers["fixed"].mirror.num_computed_tokens_np >= exact).all()
