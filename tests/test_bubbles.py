"""GPU idle-gap attribution (syncscope/runtime/bubbles.py) on synthetic timelines: no GPU needed.

Times are nanoseconds; `us(x)` reads as microseconds so the timelines look like real ones."""

import random

import pytest

from syncscope.runtime.bubbles import (
    LAUNCH_BOUND,
    REGION_EDGE,
    SYNC,
    WINDOW_EDGE,
    GpuActivity,
    SyncMark,
    attribute,
    busy_periods,
    site_totals,
)


def us(x: float) -> int:
    return int(x * 1000)


def act(start, end, device=0, stream=7, tid=None):
    return GpuActivity(device, stream, us(start), us(end), tid)


def sync(key, start, end, done=None, tid=None):
    return SyncMark(key, us(start), us(end), us(end if done is None else done), tid)


def causes(result):
    return [(g.device, g.start_ns // 1000, g.end_ns // 1000, g.cause, g.sync) for g in result.gaps]


def test_a_sync_that_drains_the_queue_owns_the_gap_until_the_next_launch():
    # Kernels until 1000 us; the host waits in .item() from 400 us and is released at 1003 us;
    # it prepares the next step until the next kernel starts at 3000 us.
    result = attribute(
        [act(0, 1000), act(3000, 3500)],
        [sync("item", 400, 1003)],
        (0, us(4000)),
    )
    assert causes(result) == [(0, 1000, 3000, SYNC, "item"), (0, 3500, 4000, WINDOW_EDGE, None)]
    assert result.idle_by_cause()[SYNC] == us(2000)


def test_a_gap_without_a_waiting_sync_is_launch_bound():
    # The host is slow: the device runs dry at 1000 us while the host is busy, not waiting.
    # A sync later in the gap (the device already idle) did not cause it.
    result = attribute([act(0, 1000), act(3000, 3500)], [sync("late", 2000, 2001)], (0, us(3500)))
    assert causes(result) == [(0, 1000, 3000, LAUNCH_BOUND, None)]


def test_gaps_between_kernels_queued_before_the_release_are_not_the_syncs():
    # .item() waits from 5 us to 40 us; the matmul, the sum and the copy it waits for were queued
    # before it, with short gaps between them on the device. Only the gap after the copy, which
    # ends with a kernel launched after the release, is the sync's bubble.
    acts = [act(0, 10), act(12, 15), act(17, 19), act(2100, 2200)]
    result = attribute(acts, [sync("item", 5, 40)], (0, us(2200)))
    assert causes(result) == [
        (0, 10, 12, LAUNCH_BOUND, None),
        (0, 15, 17, LAUNCH_BOUND, None),
        (0, 19, 2100, SYNC, "item"),
    ]


def test_the_wait_must_cover_the_start_within_the_tolerance():
    acts = [act(0, 1000), act(2000, 2500)]
    released_early = attribute(acts, [sync("s", 500, 970)], (0, us(2500)))  # 30 us before the drain
    released_near = attribute(acts, [sync("s", 500, 990)], (0, us(2500)))  # 10 us: clock noise
    assert causes(released_early)[0][3] == LAUNCH_BOUND
    assert causes(released_near)[0][3] == SYNC


def test_overlapping_streams_are_one_busy_device():
    acts = [act(0, 100, stream=1), act(50, 200, stream=2), act(150, 180, stream=3), act(250, 300, stream=1)]
    assert busy_periods(acts, 0, us(300)) == {0: [(0, us(200)), (us(250), us(300))]}
    result = attribute(acts, [sync("s", 10, 201)], (0, us(300)))
    # The sync waited on stream 1 (drained at 100 us) but stream 2 kept the device busy: the only
    # gap is where every stream was idle, and the wait covers its start.
    assert causes(result) == [(0, 200, 250, SYNC, "s")]


def test_a_sync_with_no_gap_gets_no_bubble():
    # Another stream keeps the device busy across the whole wait: the sync costs the host, not the GPU.
    acts = [act(0, 1000, stream=1), act(0, 2000, stream=2)]
    result = attribute(acts, [sync("s", 100, 1001)], (0, us(2000)))
    assert result.gaps == [] and result.by_sync() == {}
    assert site_totals(result, lambda key: key) == {}


def test_gaps_per_device_and_the_launching_thread_decides():
    # One host thread per device. Thread 1 feeds device 0 and syncs; thread 2 feeds device 1,
    # which runs dry at the same moment while thread 2 is busy: that gap is launch-bound.
    acts = [
        act(0, 1000, device=0, tid=1),
        act(1500, 2000, device=0, tid=1),
        act(0, 1000, device=1, tid=2),
        act(1800, 2000, device=1, tid=2),
    ]
    result = attribute(acts, [sync("t1", 500, 1002, tid=1)], (0, us(2000)))
    assert causes(result) == [(0, 1000, 1500, SYNC, "t1"), (1, 1000, 1800, LAUNCH_BOUND, None)]
    assert result.devices == (0, 1) and result.gpu_time_ns == 2 * us(2000)


def test_one_thread_feeding_two_devices_starves_both():
    # A single host thread blocked on device 0 cannot launch on device 1 either.
    acts = [act(0, 1000, device=0, tid=1), act(1500, 2000, device=0, tid=1), act(0, 900, device=1, tid=1), act(1600, 2000, device=1, tid=1)]
    result = attribute(acts, [sync("s", 500, 1002, tid=1)], (0, us(2000)), tolerance_ns=us(150))
    assert [(g.device, g.cause, g.sync) for g in result.gaps] == [(1, SYNC, "s"), (0, SYNC, "s")]


def test_gaps_at_region_edges_are_not_counted():
    # Two steps; between them the host is outside every region. A gap opening inside a step and
    # closing in the next one is the end of a region; a gap inside one step is launch-bound.
    acts = [act(0, 100), act(150, 300), act(700, 900)]
    regions = [(0, us(400)), (us(600), us(1000))]
    result = attribute(acts, [], (0, us(1000)), regions=regions)
    assert causes(result) == [(0, 100, 150, LAUNCH_BOUND, None), (0, 300, 700, REGION_EDGE, None), (0, 900, 1000, WINDOW_EDGE, None)]
    # Without regions (the whole program in scope) the same gap is launch-bound.
    assert causes(attribute(acts, [], (0, us(1000))))[1][3] == LAUNCH_BOUND


def test_a_sync_at_the_end_of_a_step_owns_the_gap_across_the_region_edge():
    # The case: a short wait at the end of a step, then the GPU idles until the next step.
    acts = [act(0, 300), act(700, 900)]
    regions = [(0, us(320)), (us(600), us(1000))]
    result = attribute(acts, [sync("end", 280, 302)], (0, us(1000)), regions=regions)
    assert causes(result)[0] == (0, 300, 700, SYNC, "end")


def test_gaps_touching_the_window_are_edges_even_after_a_sync():
    acts = [act(100, 500)]
    result = attribute(acts, [sync("s", 400, 501)], (0, us(1000)))
    assert causes(result) == [(0, 0, 100, WINDOW_EDGE, None), (0, 500, 1000, WINDOW_EDGE, None)]


def test_syncscopes_bookkeeping_is_cut_out_of_the_bubble():
    # Released at 1001 us; syncscope's stack walk and event take until 1041 us; the program then
    # sleeps and launches at 3041 us: the program's bubble is 2000 us, syncscope's own 40 us.
    result = attribute([act(0, 1000), act(3041, 3100)], [sync("s", 500, 1001, done=1041)], (0, us(3100)))
    (gap,) = result.gaps
    assert gap.cause == SYNC and gap.length_ns == us(2041)
    assert gap.own_ns == us(40) and gap.idle_ns == us(2001)
    assert result.syncscope_ns == us(40)


def test_site_totals_group_bubbles_by_site():
    acts = [act(0, 100), act(200, 300), act(400, 500), act(900, 1000)]
    syncs = [sync(0, 50, 101), sync(1, 250, 301), sync(2, 450, 501)]
    result = attribute(acts, syncs, (0, us(1000)))
    site_of = {0: "a.py:1", 1: "a.py:1", 2: "b.py:9"}.__getitem__
    assert site_totals(result, site_of) == {"a.py:1": (2, us(200)), "b.py:9": (1, us(400))}


def test_bad_window_is_refused():
    with pytest.raises(ValueError):
        attribute([], [], (10, 5))


def _idle_by_sweep(activities, start, end):
    """Total idle time over every device, by a different method than the one under test: sweep
    the sorted boundary events of each device and accumulate time where the running count is 0."""
    total = 0
    for device in {a.device for a in activities}:
        points = []
        for a in activities:
            if a.device == device:
                points += [(a.start_ns, 1), (a.end_ns, -1)]
        points.sort(key=lambda p: (p[0], -p[1]))
        running, last = 0, start
        for t, step in points:
            t = min(max(t, start), end)
            if running == 0:
                total += t - last
            running += step
            last = t
        if running == 0:
            total += end - last
    return total


@pytest.mark.parametrize("seed", range(40))
def test_conservation_on_random_timelines(seed):
    """Every nanosecond of idle time lands in exactly one cause (or syncscope's own part)."""
    rng = random.Random(seed)
    activities, syncs = [], []
    for device in range(rng.randint(1, 3)):
        t = rng.randint(0, 50_000)
        for _ in range(rng.randint(1, 40)):
            length = rng.randint(1, 30_000)
            activities.append(GpuActivity(device, rng.randint(0, 3), t, t + length, rng.choice([None, 1, 2])))
            t += rng.randint(-20_000, 60_000)  # negative: overlaps another stream
    for key in range(rng.randint(0, 30)):
        s = rng.randint(0, 900_000)
        e = s + rng.randint(0, 40_000)
        syncs.append(SyncMark(key, s, e, e + rng.randint(0, 30_000), rng.choice([None, 1, 2])))
    start, end = rng.randint(0, 40_000), rng.randint(500_000, 1_000_000)
    regions = None if seed % 2 else [(0, 300_000), (350_000, end)]
    result = attribute(activities, syncs, (start, end), regions=regions)
    counted = sum(result.idle_by_cause().values())
    assert counted + result.syncscope_ns == result.total_idle_ns == _idle_by_sweep(activities, start, end)
    for gap in result.gaps:
        assert 0 <= gap.own_ns <= gap.length_ns and start <= gap.start_ns < gap.end_ns <= end
