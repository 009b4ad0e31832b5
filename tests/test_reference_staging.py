"""reference_impl's persistent pinned staging (`PinnedStaging`).

The staging must (1) give the device exactly the host data, (2) never hand out a slot whose copy
may still be in flight (the host would overwrite data the GPU has not read yet), (3) never wait
for the device, and (4) stop allocating once the ring is deep and large enough. Without a GPU the
device is syncscope's simulated one; (2) and (4) are also checked with events that report the
copies as pending, and on a GPU against a real queue.
"""

import os

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from reference_impl import common, kernels  # noqa: E402
from reference_impl.common import PinnedStaging  # noqa: E402

HAS_CUDA = torch.cuda.is_available()
TRAP_DEVICE = "cuda" if HAS_CUDA else "sim"
_DETECTOR = ("syncscope.runtime.cuda", "CudaDetector") if HAS_CUDA else ("syncscope.runtime.sim", "SimulatedCudaDetector")


@pytest.fixture
def trap():
    """A CUDA device (real, or simulated) under syncscope's trap: yields the trap."""
    if not hasattr(pytest.importorskip(_DETECTOR[0]), _DETECTOR[1]):
        pytest.skip(f"{'.'.join(_DETECTOR)} does not exist yet")
    import syncscope

    with syncscope.trap(device=TRAP_DEVICE) as t:
        yield t


def counted(t):
    return [e for e in t.events if not e.allowed]


def to_host(x: torch.Tensor) -> np.ndarray:
    import syncscope

    with syncscope.allow_sync("test check"):
        return x.cpu().numpy()


def test_upload_gives_the_device_the_host_data(trap):
    staging = PinnedStaging("cuda", slot_bytes=64, num_slots=2)
    arrays = [
        np.arange(7, dtype=np.int32),
        np.arange(12, dtype=np.int64).reshape(3, 4) * -5,
        np.array([True, False, True]),
        np.zeros(0, dtype=np.int32),
        np.linspace(0, 1, 5, dtype=np.float32),
    ]
    for _step in range(3):
        got = staging.upload(*arrays)
        assert len(got) == len(arrays)
        for a, g in zip(arrays, got):
            assert g.is_cuda and g.dtype == torch.from_numpy(a).dtype and tuple(g.shape) == a.shape
            np.testing.assert_array_equal(to_host(g), a)
    (single,) = staging.upload(torch.arange(4, dtype=torch.int32))  # a CPU tensor works too
    np.testing.assert_array_equal(to_host(single), np.arange(4))
    dst = torch.zeros(2, 3, dtype=torch.int32, device="cuda")
    staging.copy_into(dst, np.arange(6, dtype=np.int32).reshape(2, 3))
    np.testing.assert_array_equal(to_host(dst), np.arange(6).reshape(2, 3))
    assert counted(trap) == []


def test_results_of_earlier_uploads_are_not_overwritten(trap):
    staging = PinnedStaging("cuda", slot_bytes=64, num_slots=2)
    outs = [staging.upload(np.full(8, i, np.int32))[0] for i in range(6)]
    for i, out in enumerate(outs):
        np.testing.assert_array_equal(to_host(out), np.full(8, i))


def test_a_slot_in_flight_is_never_reused_and_the_ring_settles(trap, monkeypatch):
    pending: set[int] = set()  # ids of the slots whose copy the "GPU" has not run yet
    monkeypatch.setattr(common._Slot, "is_free", lambda self: not self.in_use or id(self) not in pending)
    staging = PinnedStaging("cuda", slot_bytes=64, num_slots=2)
    used = []
    take = staging._take
    monkeypatch.setattr(staging, "_take", lambda nbytes: used.append(take(nbytes)) or used[-1])

    arrays = [np.full(10, i, np.int32) for i in range(5)]
    for a in arrays:  # the GPU never catches up
        staging.upload(a)
        pending.add(id(used[-1]))
    assert len({id(s) for s in used}) == 5, "a slot was reused while its copy was in flight"
    assert staging.num_slots == 5 and staging.growths == 3
    for a, slot in zip(arrays, used):  # each pending copy still reads its own data
        np.testing.assert_array_equal(slot.host_np[: a.nbytes].view(np.int32), a)

    pending.clear()  # the GPU caught up: the ring is deep enough from now on
    for i in range(50):
        staging.upload(np.arange(i % 10, dtype=np.int32))
    assert staging.num_slots == 5 and staging.growths == 3

    staging.upload(np.zeros(100, np.int64))  # larger than every slot: one slot grows, once
    assert staging.growths == 4
    for _ in range(20):
        staging.upload(np.zeros(100, np.int64))  # a free slot that is large enough is preferred
    assert staging.growths == 4
    assert counted(trap) == []


def test_cpu_staging_copies():
    staging = PinnedStaging("cpu")
    a = np.arange(5, dtype=np.int32)
    (out,) = staging.upload(a)
    a[:] = 0  # the caller may reuse its array
    assert out.device.type == "cpu" and out.tolist() == [0, 1, 2, 3, 4]
    assert staging.num_slots == 0


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs CUDA")
def test_real_queue_slots_wait_for_their_copies_without_blocking():
    staging = PinnedStaging("cuda", slot_bytes=64, num_slots=2)
    torch.cuda.synchronize()
    torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU work ahead of the copies
    outs = [staging.upload(np.full(16, i, np.int32))[0] for i in range(3)]
    assert staging.growths == 1  # both first slots were in flight: a third one, no wait
    torch.cuda.synchronize()
    for i, out in enumerate(outs):
        assert out.cpu().tolist() == [i] * 16
    for i in range(20):  # the GPU keeps up: no more growth
        staging.upload(np.full(16, i, np.int32))
        torch.cuda.synchronize()
    assert staging.growths == 1


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs CUDA")
def test_slot_mapping_matches_the_reference_across_specialisations():
    rng = np.random.default_rng(0)
    table = torch.from_numpy(rng.integers(0, 1000, (8, 64)).astype(np.int32)).cuda()
    for step in range(6):
        n_reqs = 1 + step % 4
        qlens = rng.integers(1, 40, n_reqs)
        qsl = torch.from_numpy(np.concatenate([[0], np.cumsum(qlens)]).astype(np.int32)).cuda()
        req = torch.from_numpy(rng.permutation(8)[:n_reqs].astype(np.int32)).cuda()
        n = int(qlens.sum())
        base = torch.from_numpy(rng.integers(0, 900, n + 1)).cuda()
        # an aligned and a misaligned positions tensor (a different Triton specialisation)
        for positions in (base[:n], base[1:]):
            got = kernels.compute_slot_mapping(positions, qsl, req, table, 16, n + 5)
            want = kernels.compute_slot_mapping_reference(positions, qsl, req, table, 16, n + 5)
            assert torch.equal(got, want)
