"""What the runtime trap records: one `HostSyncEvent` per host sync.

Standard library only, so reports can be loaded, merged and gated without torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The text of torch's sync-debug warning (c10's `warn_or_error_on_sync`): the CUDA detector routes
# warnings that start with it to the recorder, and the simulated device raises the same text.
SYNC_WARNING = "called a synchronizing CUDA operation"


class SyncKind:
    """The kinds of host sync. Strings, so they travel through JSON reports and baselines as is."""

    ITEM = "item"  # .item(), int(t), float(t), bool(t), `if t:` (a scalar read)
    TOLIST = "tolist"
    CPU_COPY = "cpu_copy"  # .cpu(), .to("cpu"), .numpy(), copy_ into host memory
    BOOL_MASK_INDEX = "bool_mask_index"  # x[gpu_bool_mask] read; x[mask] = tensor write
    HOST_INDEX = "host_index"  # x[cpu_long_index], x[cpu_bool_mask] = value
    NONZERO = "nonzero"  # nonzero, argwhere, one-argument where
    DYNAMIC_SHAPE = "dynamic_shape"  # masked_select, unique, bincount, histc, one_hot, ...
    REPEAT_INTERLEAVE = "repeat_interleave"
    H2D_COPY = "h2d_copy"  # a blocking host->device copy (torch.tensor(list, device=cuda), .to(cuda))
    H2D_PAGEABLE = "h2d_pageable"  # non_blocking=True from pageable memory: the driver blocks anyway
    SCALAR_STORE = "scalar_store"  # x_gpu[i] = python_scalar
    STREAM_SYNC = "stream_sync"
    DEVICE_SYNC = "device_sync"
    EVENT_SYNC = "event_sync"
    UNSYNCED_D2H_READ = "unsynced_d2h_read"  # hazard: read of a non_blocking D2H copy before a sync
    SYNC_IN_CAPTURE = "sync_in_capture"  # a sync inside a CUDA graph capture: the GPU refuses it
    OTHER = "other"  # a C++-level sync torch reported that no rule above names


@dataclass(frozen=True)
class Frame:
    path: str  # relative to the project root where it lies inside it
    line: int
    function: str

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "function": self.function}


@dataclass(frozen=True)
class HostSyncEvent:
    """One occurrence of a host sync.

    `site` is the user's frame (the first one outside torch and syncscope), `stack` the user's
    frames innermost first. `blocked_ns` is the wall time the host waited in the call, or None
    where it was not measured (the simulated device, or a sync torch reported from C++ outside
    any timed entry point). `related` is the second site of a hazard (the copy whose result was
    read too early)."""

    kind: str
    api: str
    site: Frame
    source: str
    stack: tuple[Frame, ...]
    thread: str
    pid: int
    region: str | None
    in_scope: bool
    allowed: bool = False
    allow_reason: str | None = None
    blocked_ns: int | None = None
    ts_ns: int = 0  # time.perf_counter_ns() at the end of the sync, for timelines
    related: Frame | None = None
    detector: str = ""
    # `h2d_pageable` only: whether its measured time says the host waited (runtime/pageable.py);
    # False makes it a potential sync that did not block this time. None: not decided.
    waited: bool | None = None
    extra: dict = field(default_factory=dict, compare=False)
