"""What the simulated device does not simulate, in one list: each entry names the feature, says how
a program reaches it and what to do instead, and raises `SimulatedDeviceError` with that text
(never torch's "Storage device not recognized: cuda", an AttributeError on `torch._C._nccl_*`, a
NotImplementedError from the CUDA backend, or a C++ abort). docs/simulated-device.md carries the
same list; tests/test_sim_unsupported.py walks it in a child process.

Three ways an entry is refused:
* `here`: `install()` below replaces the entry points with a refusal (the ones that failed with a
  raw error before, or worked wrongly: a DLPack capsule that says CUDA over host memory);
* `dispatch`: an aten op with no CPU kernel (cuDNN-only ops, CUDA-only custom ops and extensions),
  refused by dispatch.py with the op's name;
* `guard`: a public `torch.cuda` function that needs the driver, refused by cuda_guard.py with its
  qualified name.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from syncscope.runtime.sim.tensor import _SimBase

RUN_ON_A_GPU = (
    "run this program on a GPU (`syncscope run --device cuda`), or skip this call when "
    "`syncscope.runtime.sim.is_simulated()` is true"
)


@dataclass(frozen=True)
class Unsimulated:
    feature: str  # what the refusal names (the message contains it)
    way_out: str  # besides running on a GPU
    example: str  # a statement that reaches it (`x` is a simulated CUDA tensor); the walk runs it
    refused_by: str = "here"  # "here", "dispatch" (no CPU kernel) or "guard" (cuda_guard.py)


_STORAGE_WAY_OUT = "allocate tensors (`torch.empty(n, dtype=..., device=\"cuda\")`) or use `t.untyped_storage()`"

UNSIMULATED: tuple[Unsimulated, ...] = (
    Unsimulated(
        "torch.cuda.FloatStorage (legacy typed CUDA storages)",
        _STORAGE_WAY_OUT,
        "torch.cuda.FloatStorage(4)",
    ),
    Unsimulated(
        "torch.cuda.ByteStorage (legacy typed CUDA storages)",
        _STORAGE_WAY_OUT,
        "torch.cuda.ByteStorage()",
    ),
    Unsimulated(
        "Tensor.storage() (a TypedStorage) of a simulated CUDA tensor",
        "use `t.untyped_storage()`, which is simulated",
        "x.storage()",
    ),
    Unsimulated(
        "DLPack exchange of CUDA tensors",
        "exchange through host memory (`t.cpu().numpy()`, `torch.as_tensor(array, device=\"cuda\")`)",
        "torch.from_dlpack(x)",
    ),
    Unsimulated(
        "DLPack exchange of CUDA tensors",
        "exchange through host memory (`t.cpu().numpy()`, `torch.as_tensor(array, device=\"cuda\")`)",
        "torch.from_dlpack(torch.ones(2), device='cuda')",
    ),
    Unsimulated(
        "DLPack exchange of CUDA tensors",
        "exchange through host memory (`t.cpu().numpy()`, `torch.as_tensor(array, device=\"cuda\")`)",
        "torch.utils.dlpack.to_dlpack(x)",
    ),
    Unsimulated(
        "DLPack exchange of CUDA tensors",
        "exchange through host memory (`t.cpu().numpy()`, `torch.as_tensor(array, device=\"cuda\")`)",
        "x.__dlpack__()",
    ),
    Unsimulated(
        "pickling a simulated CUDA tensor (torch.save, multiprocessing queues)",
        "save host copies (`{k: v.cpu() for k, v in model.state_dict().items()}`)",
        "torch.save(x, __import__('io').BytesIO())",
    ),
    Unsimulated(
        "torch.load onto the CUDA device (map_location=\"cuda\", or a checkpoint saved from a GPU)",
        "load with `map_location=\"cpu\"` and move the tensors with `.to(\"cuda\")`",
        "torch.load(__import__('io').BytesIO(b'x'), map_location='cuda')",
    ),
    Unsimulated(
        "torch.distributed with the NCCL backend",
        "use `backend=\"gloo\"` (collectives on simulated tensors then run on the host)",
        "torch.distributed.init_process_group('nccl', init_method='tcp://127.0.0.1:1', rank=0, world_size=1)",
    ),
    Unsimulated(
        "torch.distributed with the NCCL backend",
        "use `backend=\"gloo\"` (collectives on simulated tensors then run on the host)",
        "torch.distributed.new_group([0], backend='nccl')",
    ),
    Unsimulated(
        "torch.cuda.nccl",
        "use torch.distributed with `backend=\"gloo\"`",
        "torch.cuda.nccl.all_reduce([x])",
    ),
    Unsimulated(
        "torch.cuda.nccl",
        "use torch.distributed with `backend=\"gloo\"`",
        "torch.cuda.nccl.version()",
    ),
    Unsimulated(
        "torch.cuda.jiterator (CUDA kernels compiled from C++ source at run time)",
        "write the elementwise function with torch ops, or as a Triton kernel (Triton runs on the simulated device)",
        "torch.cuda.jiterator._create_jit_fn('template <typename T> T f(T x) { return x; }')(x)",
    ),
    Unsimulated(
        "torch.cuda.jiterator (CUDA kernels compiled from C++ source at run time)",
        "write the elementwise function with torch ops, or as a Triton kernel (Triton runs on the simulated device)",
        "torch.cuda.jiterator._create_multi_output_jit_fn('template <typename T> T f(T x) { return x; }', 1)(x)",
    ),
    Unsimulated(
        "CUDA memory history and snapshots (torch.cuda.memory._record_memory_history, _snapshot)",
        "memory profiling needs the real allocator; `torch.cuda.memory_stats()` answers (zeros)",
        "torch.cuda.memory._record_memory_history()",
    ),
    Unsimulated(
        "CUDA memory history and snapshots (torch.cuda.memory._record_memory_history, _snapshot)",
        "memory profiling needs the real allocator; `torch.cuda.memory_stats()` answers (zeros)",
        "torch.cuda.memory._snapshot()",
    ),
    Unsimulated(
        "CUDA memory history and snapshots (torch.cuda.memory._record_memory_history, _snapshot)",
        "memory profiling needs the real allocator; `torch.cuda.memory_stats()` answers (zeros)",
        "torch.cuda.memory._dump_snapshot('snapshot.pickle')",
    ),
    Unsimulated(
        "interprocess CUDA events (Event.ipc_handle, Event.from_ipc_handle)",
        "synchronize across processes through the host (a queue, a barrier)",
        "torch.cuda.Event(interprocess=True).ipc_handle()",
    ),
    Unsimulated(
        "interprocess CUDA events (Event.ipc_handle, Event.from_ipc_handle)",
        "synchronize across processes through the host (a queue, a barrier)",
        "torch.cuda.Event.from_ipc_handle(0, b'')",
    ),
    Unsimulated(
        "the CUDA driver's graph handles (CUDAGraph.raw_cuda_graph, raw_cuda_graph_exec, get_graph_data)",
        "capture, replay and reset are simulated; only the driver-level handles are not",
        "torch.cuda.CUDAGraph().raw_cuda_graph()",
    ),
    Unsimulated(
        "the CUDA driver's graph handles (CUDAGraph.raw_cuda_graph, raw_cuda_graph_exec, get_graph_data)",
        "capture, replay and reset are simulated; only the driver-level handles are not",
        "torch.cuda.CUDAGraph().raw_cuda_graph_exec()",
    ),
    Unsimulated(
        "torch.cuda.gds (GPUDirect Storage)",
        "read the file on the host and copy it to the device",
        "torch.cuda.gds.GdsFile('weights.bin', 0)",
    ),
    Unsimulated(
        "aten::cudnn_convolution",
        "cuDNN-only ops have no CPU kernel; `torch.nn.functional.conv2d` is simulated",
        "torch.cudnn_convolution(torch.ones(1, 1, 3, 3, device='cuda'), torch.ones(1, 1, 1, 1, device='cuda'), (0, 0), (1, 1), (1, 1), 1, False, False, True)",
        "dispatch",
    ),
    Unsimulated(
        "aten::cudnn_grid_sampler",
        "cuDNN-only ops have no CPU kernel; `torch.nn.functional.grid_sample` is simulated",
        "torch.cudnn_grid_sampler(torch.ones(1, 1, 2, 2, device='cuda'), torch.zeros(1, 2, 2, 2, device='cuda'))",
        "dispatch",
    ),
    Unsimulated(
        "torch.cuda.current_blas_handle",
        "cuBLAS handles need the driver",
        "torch.cuda.current_blas_handle()",
        "guard",
    ),
    Unsimulated(
        "torch.cuda.caching_allocator_alloc",
        "allocate tensors instead of raw device memory",
        "torch.cuda.caching_allocator_alloc(16)",
        "guard",
    ),
    Unsimulated(
        "torch.cuda.memory.change_current_allocator",
        "custom allocators (CUDAPluggableAllocator) need the driver",
        "torch.cuda.memory.change_current_allocator(None)",
        "guard",
    ),
    Unsimulated(
        "torch.cuda.profiler.start",
        "profile on a GPU; `torch.cuda.nvtx` ranges are simulated (no-ops)",
        "torch.cuda.profiler.start()",
        "guard",
    ),
    Unsimulated(
        "torch.cuda.tunable.enable",
        "TunableOp tunes GPU kernels: nothing to tune here",
        "torch.cuda.tunable.enable(True)",
        "guard",
    ),
)


def message(feature: str, way_out: str) -> str:
    return f"syncscope simulated CUDA device: {feature} is not simulated. Ways out: {way_out}; or {RUN_ON_A_GPU}."


def refusal(feature: str, way_out: str, exc: BaseException | None = None):
    from syncscope.runtime.sim.dispatch import SimulatedDeviceError

    said = f" (torch said: {str(exc).splitlines()[0][:160]})" if exc is not None and str(exc) else ""
    return SimulatedDeviceError(message(feature, way_out) + said)


def _entry(feature_start: str) -> Unsimulated:
    return next(e for e in UNSIMULATED if e.feature.startswith(feature_start))


def _refuse_always(entry: Unsimulated, name: str):
    def refused(*args, **kwargs):
        raise refusal(entry.feature, entry.way_out)

    refused.__name__ = refused.__qualname__ = name
    return refused


def _refuse_method(entry: Unsimulated, call):
    """A handler for mode.py's table of special calls (reached for simulated tensors)."""

    def handler(func, args, kwargs):
        if args and isinstance(args[0], _SimBase):
            raise refusal(entry.feature, entry.way_out)
        return call(func, args, kwargs)

    return handler


def _refuse_for_simulated(entry: Unsimulated, original, name: str):
    """Refuse when the call's subject (first argument) is a simulated tensor, else call through."""

    def call(*args, **kwargs):
        if args and isinstance(args[0], _SimBase):
            raise refusal(entry.feature, entry.way_out)
        return original(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


def _names_cuda(where) -> bool:
    if isinstance(where, dict):
        return any(_names_cuda(v) for v in where.values())
    if isinstance(where, (str, torch.device)):
        try:
            return torch.device(where).type == "cuda"
        except (RuntimeError, TypeError):
            return False
    return False


def _dlpack_from_device(source) -> bool:
    if isinstance(source, _SimBase):
        return True
    try:  # an array of another library that lives on a CUDA device (kDLCUDA = 2, kDLCUDAManaged = 13)
        return hasattr(source, "__dlpack_device__") and int(source.__dlpack_device__()[0]) in (2, 13)
    except Exception:
        return False


def install(p, special: dict, call) -> None:
    """Refuse the `here` entries (p: the detector's Patches, undone at uninstall; `special` and
    `call`: mode.py's table of special calls on simulated tensors and its plain call)."""
    storages = _entry("torch.cuda.FloatStorage")
    for name in dir(torch.cuda):
        original = getattr(torch.cuda, name, None)
        if name.endswith("Storage") and isinstance(original, type):
            feature = f"torch.cuda.{name} (legacy typed CUDA storages)"
            p.set(torch.cuda, name, _refusing_class(original, feature, storages.way_out))

    # Methods of simulated tensors are refused in the torch-function handler's table (mode.py),
    # not by wrapping the method: a wrapper would move the TypedStorage deprecation warning of
    # every host tensor's `.storage()` from the program's line to ours.
    typed, dlpack = _entry("Tensor.storage()"), _entry("DLPack")
    special[torch.Tensor.storage] = _refuse_method(typed, call)
    special[torch.Tensor.__dlpack__] = _refuse_method(dlpack, call)
    to_dlpack = _refuse_for_simulated(dlpack, torch.utils.dlpack.to_dlpack, "to_dlpack")
    p.set(torch.utils.dlpack, "to_dlpack", to_dlpack)
    if hasattr(torch, "to_dlpack"):
        p.set(torch, "to_dlpack", to_dlpack)
    original_from_dlpack = torch.from_dlpack

    def from_dlpack(ext_tensor, *args, **kwargs):
        if _dlpack_from_device(ext_tensor) or _names_cuda(kwargs.get("device")):
            raise refusal(dlpack.feature, dlpack.way_out)
        return original_from_dlpack(ext_tensor, *args, **kwargs)

    p.set(torch, "from_dlpack", from_dlpack)
    p.set(torch.utils.dlpack, "from_dlpack", from_dlpack)

    pickling = _entry("pickling")
    p.set(_SimBase, "__reduce_ex__", _refuse_always(pickling, "__reduce_ex__"))
    _install_load(p, _entry("torch.load"))
    _install_nccl(p, _entry("torch.distributed with"), _entry("torch.cuda.nccl"))

    jiterator = _entry("torch.cuda.jiterator")
    for name in ("_create_jit_fn", "_create_multi_output_jit_fn"):
        if hasattr(torch.cuda.jiterator, name):
            # Creating one is harmless (programs do it at import); calling it needs nvrtc and a GPU.
            p.set(torch.cuda.jiterator, name, lambda *args, **kwargs: _refuse_always(jiterator, "jiterator_fn"))

    memory = _entry("CUDA memory history")
    for name in ("_record_memory_history", "_snapshot", "_dump_snapshot", "_record_memory_history_legacy"):
        if hasattr(torch.cuda.memory, name):
            p.set(torch.cuda.memory, name, _refuse_always(memory, name))

    from syncscope.runtime.sim import cuda_api, graphs

    ipc = _entry("interprocess CUDA events")
    p.set(cuda_api.SimEvent, "ipc_handle", _refuse_always(ipc, "ipc_handle"))
    p.set(cuda_api.SimEvent, "from_ipc_handle", classmethod(_refuse_always(ipc, "from_ipc_handle")))

    handles = _entry("the CUDA driver's graph handles")
    graph_class = getattr(graphs, "SimCUDAGraph", None) or torch.cuda.CUDAGraph
    for name in ("raw_cuda_graph", "raw_cuda_graph_exec", "get_graph_data"):
        p.set(graph_class, name, _refuse_always(handles, name))

    gds = getattr(torch.cuda, "gds", None)
    if gds is not None and isinstance(getattr(gds, "GdsFile", None), type):
        entry = _entry("torch.cuda.gds")
        p.set(gds, "GdsFile", _refusing_class(gds.GdsFile, entry.feature, entry.way_out))


def _refusing_class(original: type, feature: str, way_out: str) -> type:
    """A subclass whose construction is refused: `isinstance` checks against the name still work."""

    def __new__(cls, *args, **kwargs):
        raise refusal(feature, way_out)

    return type(original.__name__, (original,), {"__new__": __new__, "__module__": original.__module__})


def _install_load(p, entry: Unsimulated) -> None:
    original = torch.load

    def load(f, map_location=None, *args, **kwargs):
        if _names_cuda(map_location):
            raise refusal(entry.feature, entry.way_out)
        try:
            return original(f, map_location, *args, **kwargs)
        except RuntimeError as exc:
            text = str(exc)
            if "device not recognized: cuda" in text or "deserialize object on a CUDA device" in text:
                raise refusal(entry.feature, entry.way_out, exc) from exc
            raise

    load.__name__ = load.__qualname__ = "load"
    load.__doc__ = original.__doc__
    p.set(torch, "load", load)


def _install_nccl(p, distributed: Unsimulated, nccl: Unsimulated) -> None:
    dist = torch.distributed
    if dist.is_available():
        for name in ("init_process_group", "new_group"):
            original = getattr(dist, name, None)
            if original is not None:
                p.set(dist, name, _refuse_nccl_backend(original, name, distributed))
    module = getattr(torch.cuda, "nccl", None)
    if module is None:
        return
    for name in ("all_reduce", "reduce", "broadcast", "all_gather", "reduce_scatter", "version", "unique_id", "init_rank"):
        if callable(getattr(module, name, None)):
            p.set(module, name, _refuse_always(nccl, name))
    # A query a program branches on: there is no NCCL here, so the answer is no.
    p.set(module, "is_available", lambda tensors=None: False)


def _refuse_nccl_backend(original, name: str, entry: Unsimulated):
    def call(*args, **kwargs):
        backend = kwargs.get("backend", args[0] if name == "init_process_group" and args else None)
        if name == "new_group" and backend is None and len(args) > 2:
            backend = args[2]
        if backend is not None and "nccl" in str(backend).lower():
            raise refusal(entry.feature, entry.way_out)
        return original(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = original.__doc__
    return call
