"""Did a pageable `non_blocking` host->device copy wait? Decided from its measured host time.

`x.to("cuda", non_blocking=True)` from pageable (not pinned) memory is never asynchronous: the
driver stages the data through its own pinned buffer. Small copies fit that buffer and return at
once; larger ones wait for the buffer, so for the GPU work queued ahead of them. On the H200
(`bench/copy_probe.py`, behind 25 ms of queued work; docs/gpu-results.md) the host waited none of
the queue at 64 B and 256 KiB (0.12-0.16 ms in the call, shim included), 35% of it at 4 MiB, 48% at
32 MiB, all of it at 256 MiB. So such a copy is a *potential* sync: it blocks once the data (or
the queue) is large enough, and a run with small copies only shows that it did not block *this
time*. The report keeps those apart from the syncs that blocked (`SiteStats.potential`).

The call's measured time says which it was: staging alone costs a fixed overhead plus the copy
into the staging buffer; anything well beyond that is a wait. The bound is generous on both terms
(half a millisecond, and 4 GB/s where host memcpy runs at several times that), and capped at 2 ms:
a call that kept the host 2 ms counts as blocking, whatever it was waiting for.
Standard library only.
"""

from __future__ import annotations

NO_WAIT_BASE_NS = 500_000  # fixed cost of a call that does not wait: shim, launch, a small memcpy
STAGING_NS_PER_BYTE = 0.25  # 4 GB/s into the driver's staging buffer
NO_WAIT_CAP_NS = 2_000_000  # past this the host lost real time, whatever it waited for


def no_wait_bound_ns(nbytes: int) -> int:
    """The longest a pageable copy of `nbytes` may take and still count as not waiting."""
    return int(min(NO_WAIT_BASE_NS + STAGING_NS_PER_BYTE * max(0, nbytes), NO_WAIT_CAP_NS))


def copy_waited(blocked_ns: int | None, nbytes: int | None) -> bool | None:
    """True when the measured time says the copy waited, False when it says it did not, None when
    the time or size is unknown (the simulated device measures no time): unknown counts as waited."""
    if blocked_ns is None or nbytes is None:
        return None
    return blocked_ns > no_wait_bound_ns(nbytes)
