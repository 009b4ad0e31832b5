"""NVTX marks, so each sync stands out in Nsight Systems. No-ops when nvtx is missing or no
profiler is attached (the nvtx package then costs well under a microsecond a call)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Iterator

try:
    import nvtx as _nvtx
except ImportError:  # nvtx is a declared dependency, but a bare environment must still run
    _nvtx = None

if TYPE_CHECKING:
    from syncscope.events import HostSyncEvent

DOMAIN = "syncscope"
_RED = 0xFFD62728


def mark(event: "HostSyncEvent") -> None:
    """An instant marker at a sync whose start the detector could not know in advance."""
    if _nvtx is not None:
        _nvtx.mark(message=f"sync {event.kind} {event.site.path}:{event.site.line}", color=_RED, domain=DOMAIN)


@contextlib.contextmanager
def blocking_range(name: str) -> Iterator[None]:
    """A range around a call known to block (an explicit synchronize, an .item() on the device)."""
    if _nvtx is None:
        yield
        return
    rng = _nvtx.start_range(message=name, color=_RED, domain=DOMAIN)
    try:
        yield
    finally:
        _nvtx.end_range(rng)
