"""`torch.autocast("cuda")` on the simulated device.

torch's CUDA autocast is a dispatch key (AutocastCUDA) that every op on a tensor reporting
`cuda` passes through, CPU-only build or not: it casts the op's inputs by CUDA's own op lists
(`mm`/`linear`/`conv`/SDPA to the autocast dtype, `softmax`/`layer_norm`/`sum`... to float32,
`cat`/`stack` to the widest input) and then calls the op again on the cast tensors, which reach
the simulated device's dispatch like any other op. So the simulated device gets CUDA autocast's
dtype semantics by construction, with the numbers of the CPU kernels in that dtype.

One part of it cannot run without a CUDA build: the weight-cast cache. With the cache on,
casting a leaf that requires grad (every `nn.Parameter`) stores the cast in a C++ cache whose
bookkeeping asks the CUDA device guard for the device, and a CPU-only build throws there from
code that must not throw: `terminate called after throwing an instance of 'c10::Error'`, the
process is gone. While the simulated device is installed the cache stays off underneath (each
autocast region casts the weights again: the same values, a little more CPU time); the program
still reads back the setting it asked for.

And one more: an autocast kernel handed a tensor that requires grad builds autograd metadata
that asks the same guard for the tensor's stream (another C++ abort, even under `no_grad`).
No simulated tensor requires grad itself (the graph lives on the CPU tensors it holds,
autograd.py), so this cannot happen.
"""

from __future__ import annotations

import threading

import torch


class _Requested(threading.local):
    # What the program asked for on this thread (torch keeps the flag per thread too); None:
    # nothing asked yet, so the answer is torch's own (which starts True).
    cache_enabled: bool | None = None


_requested = _Requested()
# Is CUDA autocast on in some thread? (mode.py's one cheap test per call; set by the patched
# torch.set_autocast_enabled, which every torch.autocast enter and exit goes through.)
cuda_enabled = [False]
_enabled_threads: set = set()
_before: list = [True]  # the installing thread's setting before install


def install(p) -> None:
    """Keep autocast's weight cache off in every thread while installed (`p`: cuda_api.Patches)."""
    set_cache = torch.set_autocast_cache_enabled
    is_cache = torch.is_autocast_cache_enabled

    def set_autocast_cache_enabled(enabled: bool) -> None:
        _requested.cache_enabled = bool(enabled)
        set_cache(False)

    def is_autocast_cache_enabled() -> bool:
        requested = _requested.cache_enabled
        return is_cache() if requested is None else requested

    set_enabled = torch.set_autocast_enabled

    def set_autocast_enabled(*args) -> None:
        set_enabled(*args)
        device, enabled = (args[0], args[1]) if len(args) == 2 else ("cuda", args[0])
        if device == "cuda":
            (_enabled_threads.add if enabled else _enabled_threads.discard)(threading.get_ident())
            cuda_enabled[0] = bool(_enabled_threads)

    set_autocast_enabled.__doc__ = set_enabled.__doc__
    p.set(torch, "set_autocast_enabled", set_autocast_enabled)
    set_autocast_cache_enabled.__doc__ = set_cache.__doc__
    is_autocast_cache_enabled.__doc__ = is_cache.__doc__
    p.set(torch, "set_autocast_cache_enabled", set_autocast_cache_enabled)
    p.set(torch, "is_autocast_cache_enabled", is_autocast_cache_enabled)
    _before[0] = is_cache()
    set_cache(False)  # the installing thread: an autocast entered through torch._C directly


def uninstall() -> None:
    """Give the installing thread its cache setting back: the last one the program asked for,
    or the one it had before install (call after the patches are undone)."""
    requested = _requested.cache_enabled
    _requested.cache_enabled = None
    _enabled_threads.clear()
    cuda_enabled[0] = False
    torch.set_autocast_cache_enabled(_before[0] if requested is None else requested)
