"""The `torch.cuda` surface of the simulated device.

A CPU-only torch has `torch.cuda`, but every entry point that would talk to a driver raises. While
the simulated device is installed these names are replaced by ones that answer as one GPU would
(`is_available()` is True, one device, `cuda:0`), and the explicit synchronizations
(`torch.cuda.synchronize`, `Stream.synchronize`, `Event.synchronize`) are reported with the same
kinds and API names as on a real GPU. Streams and events are ordering tokens: an event records a
position in its stream's queue, which is what the race tracker (race.py) needs to know which
non_blocking copies a synchronization covers.

`Patches` records every attribute it replaces, so `uninstall()` leaves torch exactly as it was.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from dataclasses import dataclass

import torch

from syncscope.events import SyncKind as K
from syncscope.runtime.sim import race, state

_MISSING = object()


class Patches:
    """setattr with memory: `undo()` restores every replaced (or deletes every added) attribute."""

    def __init__(self) -> None:
        self._saved: list[tuple[object, str, object]] = []

    def set(self, owner, name: str, value) -> None:
        self._saved.append((owner, name, owner.__dict__.get(name, _MISSING) if hasattr(owner, "__dict__") else getattr(owner, name, _MISSING)))
        setattr(owner, name, value)

    def undo(self) -> None:
        for owner, name, old in reversed(self._saved):
            if old is _MISSING:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, old)
        self._saved.clear()


# -- streams and events ---------------------------------------------------------------------------
class SimStream:
    """A CUDA stream of the simulated device: work runs eagerly on the CPU, so a stream is an
    identity plus a place in the global order of enqueued work."""

    _ids = itertools.count(1)

    def __init__(self, device=None, priority: int = 0, **kwargs):
        self.device = state.DEVICE
        self.priority = priority
        self.stream_id = next(self._ids)
        self.cuda_stream = self.stream_id
        self.device_index = 0
        self.device_type = 1  # c10::DeviceType::CUDA

    def synchronize(self) -> None:
        state.sync(K.STREAM_SYNC, "Stream.synchronize", stream=self, cxx=False)
        race.complete(self)

    def query(self) -> bool:
        race.complete(self)  # "done": our work ran eagerly; the host may now rely on it
        return True

    def is_capturing(self) -> bool:  # torch.optim asks before each step (graph-capture health check)
        return state.local.capture is not None

    def wait_event(self, event) -> None:  # device-side ordering: the host does not wait
        pass

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self, event=None):
        event = event or SimEvent()
        event.record(self)
        return event

    def __enter__(self):
        self._ctx = stream(self)
        self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)

    def __repr__(self) -> str:
        return f"<torch.cuda.Stream device=cuda:0 cuda_stream={self.cuda_stream:#x} (syncscope simulated)>"


class SimEvent:
    """A CUDA event of the simulated device: remembers where in its stream it was recorded."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False, external: bool = False):
        self.enable_timing = enable_timing
        self.stream = None
        self.seq: int | None = None
        self._time = None

    def record(self, stream=None) -> None:
        self.stream = stream or current_stream()
        self.seq = race.seq_now()
        self._time = time.perf_counter()

    def synchronize(self) -> None:
        state.sync(K.EVENT_SYNC, "Event.synchronize", stream=self.stream, cxx=False)
        if self.seq is not None:
            race.complete(self.stream, self.seq)

    def query(self) -> bool:
        if self.seq is not None:
            race.complete(self.stream, self.seq)
        return True

    def wait(self, stream=None) -> None:
        pass

    def elapsed_time(self, end_event) -> float:
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1000.0

    @property
    def cuda_event(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return "<torch.cuda.Event (syncscope simulated)>"


_default_stream = SimStream()


class _Current(threading.local):
    stream = None


_current = _Current()


def current_stream(device=None) -> SimStream:
    return _current.stream or _default_stream


def default_stream(device=None) -> SimStream:
    return _default_stream


def set_stream(s) -> None:
    _current.stream = s


@contextlib.contextmanager
def stream(s):
    if s is None:
        yield
        return
    previous = _current.stream
    _current.stream = s
    try:
        yield s
    finally:
        _current.stream = previous


class StreamContext:
    def __init__(self, s):
        self.stream = s
        self._previous = None

    def __enter__(self):
        self._previous = _current.stream
        if self.stream is not None:
            _current.stream = self.stream
        return self.stream

    def __exit__(self, *exc):
        _current.stream = self._previous


def synchronize(device=None) -> None:
    state.sync(K.DEVICE_SYNC, "torch.cuda.synchronize", cxx=False)
    race.complete(None)


def accelerator_synchronize(device=None) -> None:
    state.sync(K.DEVICE_SYNC, "torch.accelerator.synchronize", cxx=False)
    race.complete(None)


# -- device queries -------------------------------------------------------------------------------
@dataclass(frozen=True)
class SimDeviceProperties:
    name: str = state.DEVICE_NAME
    major: int = 9
    minor: int = 0
    total_memory: int = 80 * 1024**3
    multi_processor_count: int = 132
    is_integrated: bool = False
    is_multi_gpu_board: bool = False
    warp_size: int = 32
    max_threads_per_multi_processor: int = 2048
    L2_cache_size: int = 50 * 1024**2
    regs_per_multiprocessor: int = 65536
    gcnArchName: str = "NA"
    uuid: str = "00000000-0000-0000-0000-000000000000"


class device:
    """`with torch.cuda.device(0):` - one device, nothing to switch."""

    def __init__(self, device):
        self.idx = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class device_of(device):
    def __init__(self, obj):
        super().__init__(0)


_RealGenerator = torch.Generator


class _GeneratorMeta(type(_RealGenerator)):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, _RealGenerator)

    def __subclasscheck__(cls, sub) -> bool:
        return issubclass(sub, _RealGenerator)


class SimGenerator(_RealGenerator, metaclass=_GeneratorMeta):
    """`torch.Generator(device="cuda")`: the simulated device's random ops run on the CPU, so its
    generator is a CPU one (a CPU-only build cannot make a CUDA generator). Every real generator
    still passes `isinstance(g, torch.Generator)`."""

    def __new__(cls, device="cpu"):
        return _RealGenerator("cpu")


def _set_sync_debug_mode(debug_mode) -> None:
    if isinstance(debug_mode, str):
        modes = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in modes:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`")
        debug_mode = modes[debug_mode]
    state.S.debug_mode = int(debug_mode)


def _zero(*args, **kwargs) -> int:
    return 0


def _noop(*args, **kwargs) -> None:
    return None


def _seed(seed) -> None:
    # Random ops of the simulated device draw from the CPU generator; seed that one.
    torch.default_generator.manual_seed(int(seed))


def _record_stream_accepting(original):
    """`Tensor.record_stream` that takes a simulated stream: torch's argument parser refuses any
    object that is not a C++ Stream ("unknown parameter type") before a tensor subclass is asked.
    The allocator has nothing to hold back here (the data is CPU memory), so it is a no-op."""

    def record_stream(self, stream):
        if isinstance(stream, SimStream):
            return None
        return original(self, stream)

    return record_stream


def install(p: Patches) -> None:
    cuda = torch.cuda
    props = SimDeviceProperties()
    values = {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "_lazy_init": _noop,
        "init": _noop,
        "device_count": lambda: 1,
        "current_device": lambda: 0,
        "set_device": _noop,
        "get_device_name": lambda device=None: props.name,
        "get_device_properties": lambda device=None: props,
        "get_device_capability": lambda device=None: (props.major, props.minor),
        "get_arch_list": lambda: ["sm_90"],
        "is_bf16_supported": lambda including_emulation=True: True,
        "is_tf32_supported": lambda: True,
        "synchronize": synchronize,
        "current_stream": current_stream,
        "default_stream": default_stream,
        "set_stream": set_stream,
        "stream": stream,
        "StreamContext": StreamContext,
        "Stream": SimStream,
        "Event": SimEvent,
        "device": device,
        "device_of": device_of,
        "set_sync_debug_mode": _set_sync_debug_mode,
        "get_sync_debug_mode": lambda: state.S.debug_mode,
        "empty_cache": _noop,
        "ipc_collect": _noop,
        "memory_allocated": _zero,
        "max_memory_allocated": _zero,
        "memory_reserved": _zero,
        "max_memory_reserved": _zero,
        "reset_peak_memory_stats": _noop,
        "reset_max_memory_allocated": _noop,
        "reset_accumulated_memory_stats": _noop,
        "memory_stats": lambda device=None: {},
        "mem_get_info": lambda device=None: (props.total_memory, props.total_memory),
        "manual_seed": _seed,
        "manual_seed_all": _seed,
        "seed": _noop,
        "seed_all": _noop,
        "get_rng_state": lambda device="cuda": torch.get_rng_state(),
        "set_rng_state": lambda new_state, device="cuda": torch.set_rng_state(new_state),
    }
    for name, value in values.items():
        p.set(cuda, name, value)
    p.set(torch, "Generator", SimGenerator)
    p.set(torch.Tensor, "record_stream", _record_stream_accepting(torch.Tensor.record_stream))
    nvtx = getattr(cuda, "nvtx", None)
    if nvtx is not None:
        for name in ("range_push", "range_pop", "mark", "range_start", "range_end"):
            if hasattr(nvtx, name):
                p.set(nvtx, name, _noop if name != "range_start" else _zero)
    acc = getattr(torch, "accelerator", None)
    if acc is not None:
        acc_values = {
            "is_available": lambda: True,
            "current_accelerator": lambda check_available=False: torch.device("cuda"),
            "device_count": lambda: 1,
            "current_device_index": lambda: 0,
            "current_device_idx": lambda: 0,
            "set_device_index": _noop,
            "set_device_idx": _noop,
            "synchronize": accelerator_synchronize,
            "current_stream": current_stream,
            "set_stream": set_stream,
            "empty_cache": _noop,
        }
        for name, value in acc_values.items():
            if hasattr(acc, name):
                p.set(acc, name, value)
    race.current_stream = current_stream
