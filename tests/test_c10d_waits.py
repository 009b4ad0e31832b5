"""c10d calls that wait in C++ run with torch's sync-debug mode off (so its warning cannot leak
to the program's stderr), and a blocking NCCL barrier is recorded as a sync instead.

CPU: a real gloo process group (world size 1) for the wrapping and the teardown, and a stand-in
`distributed_c10d` whose `get_backend` says "nccl" for the barrier path (gloo's barrier does not
touch the GPU, so it is passed through). The real multi-GPU check is tests/test_gpu_nccl_teardown.py.
"""

from __future__ import annotations

import threading
import time
import types

import torch.distributed as dist

from syncscope.runtime.c10d_waits import C10dWaits


class DebugMode:
    """Stands in for torch's process-global sync-debug mode; logs every switch."""

    def __init__(self, mode: int = 1):
        self.mode = mode
        self.switches: list[int] = []

    def get(self) -> int:
        return self.mode

    def set(self, mode) -> None:
        self.mode = int(mode)
        self.switches.append(self.mode)


def test_teardown_runs_with_the_debug_mode_off_and_uninstall_restores_torch(tmp_path):
    mode, recorded = DebugMode(), []
    originals = (dist.destroy_process_group, dist.barrier, dist.distributed_c10d.destroy_process_group)
    waits = C10dWaits(mode.set, mode.get, lambda ns, frame: recorded.append(ns))
    waits.install()
    try:
        assert dist.destroy_process_group is not originals[0]
        assert dist.distributed_c10d.destroy_process_group is dist.destroy_process_group
        dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
        dist.barrier()  # gloo: no GPU involved, passed through untouched
        assert mode.switches == [] and recorded == []
        dist.destroy_process_group()
        assert mode.switches == [0, 1] and mode.mode == 1  # off for the teardown, then back on
        assert not dist.is_initialized()
    finally:
        waits.uninstall()
        if dist.is_initialized():
            dist.destroy_process_group()
    assert (dist.destroy_process_group, dist.barrier, dist.distributed_c10d.destroy_process_group) == originals


def test_the_debug_mode_stays_off_while_the_user_had_it_off():
    mode = DebugMode(mode=0)
    calls = []
    c10d = types.SimpleNamespace(destroy_process_group=lambda: calls.append(mode.mode), get_backend=lambda g: "gloo")
    fake = types.SimpleNamespace(is_available=lambda: True, distributed_c10d=c10d, destroy_process_group=c10d.destroy_process_group)
    waits = C10dWaits(mode.set, mode.get, lambda ns, frame: None)
    waits.install(fake, c10d)
    fake.destroy_process_group()
    waits.uninstall()
    assert calls == [0] and mode.switches == []


def _fake_nccl(mode: DebugMode, seen: list, started: threading.Barrier | None = None):
    def barrier(group=None, async_op=False, device_ids=None, timeout=None):
        seen.append(("barrier", mode.mode, async_op))
        if started is not None:
            started.wait(timeout=5)  # both threads inside at once
        time.sleep(0.002)
        return "work" if async_op else None

    c10d = types.SimpleNamespace(barrier=barrier, get_backend=lambda group: "nccl", destroy_process_group=lambda: None)
    return types.SimpleNamespace(is_available=lambda: True, distributed_c10d=c10d, barrier=barrier), c10d


def test_a_blocking_nccl_barrier_is_recorded_with_its_time_and_no_warning():
    mode, seen, recorded = DebugMode(), [], []
    fake, c10d = _fake_nccl(mode, seen)
    waits = C10dWaits(mode.set, mode.get, lambda ns, frame: recorded.append((ns, frame.f_back.f_code.co_name)))
    waits.install(fake, c10d)
    try:
        fake.barrier()
        assert fake.barrier(async_op=True) == "work"  # returns at once: not a wait, left alone
        assert fake.barrier(None, True) == "work"
    finally:
        waits.uninstall()
    assert seen == [("barrier", 0, False), ("barrier", 1, True), ("barrier", 1, True)]
    assert len(recorded) == 1 and recorded[0][0] >= 2_000_000
    assert recorded[0][1] == "test_a_blocking_nccl_barrier_is_recorded_with_its_time_and_no_warning"
    assert mode.mode == 1


def test_overlapping_barriers_turn_the_mode_back_on_only_when_the_last_one_leaves():
    mode, seen, recorded = DebugMode(), [], []
    both_inside = threading.Barrier(2)
    fake, c10d = _fake_nccl(mode, seen, both_inside)
    waits = C10dWaits(mode.set, mode.get, lambda ns, frame: recorded.append(ns))
    waits.install(fake, c10d)
    try:
        threads = [threading.Thread(target=fake.barrier) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=10)
    finally:
        waits.uninstall()
    assert [s[1] for s in seen] == [0, 0]
    assert mode.switches == [0, 1] and len(recorded) == 2
