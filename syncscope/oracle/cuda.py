"""The only GPU code of the oracle: a `Gpu` (see timing.py) backed by torch on a CUDA device.

Kept tiny on purpose: everything that decides anything runs on the CPU in tests with a fake.
"""

from __future__ import annotations

NO_GPU_MESSAGE = (
    "the oracle needs a real CUDA GPU: it times each line behind GPU work queued on the device, "
    "and torch sees no CUDA device here ({why}). On a machine without a GPU, "
    "`syncscope run --device sim` finds the syncs that hooks can see."
)


class OracleUnavailable(RuntimeError):
    """No CUDA device (or a torch without `torch.cuda._sleep`)."""


def require_cuda():
    """Return torch when a CUDA device is usable, else raise `OracleUnavailable` with the reason."""
    try:
        import torch
    except ImportError as exc:
        raise OracleUnavailable(NO_GPU_MESSAGE.format(why=f"torch is not importable: {exc}")) from None
    if not torch.cuda.is_available():
        why = "torch.cuda.is_available() is False"
        if torch.version.cuda is None:
            why += f"; this torch ({torch.__version__}) is a CPU-only build"
        raise OracleUnavailable(NO_GPU_MESSAGE.format(why=why))
    if not hasattr(torch.cuda, "_sleep"):
        raise OracleUnavailable(f"this torch ({torch.__version__}) has no torch.cuda._sleep to queue known GPU work")
    return torch


class CudaGpu:
    """Sleeps on the *current* stream of the current device; the marker is an event recorded
    right after the sleep, so `sleep_done` is a non-blocking `cudaEventQuery`."""

    def __init__(self, torch_module=None):
        self.torch = torch_module or require_cuda()
        cuda = self.torch.cuda
        index = cuda.current_device()
        self.device = f"cuda:{index} ({cuda.get_device_name(index)})"
        self._marker = None

    def drain(self) -> None:
        self.torch.cuda.synchronize()

    def sleep(self, cycles: int) -> None:
        cuda = self.torch.cuda
        cuda._sleep(int(cycles))
        self._marker = cuda.Event()
        self._marker.record()

    def sleep_done(self) -> bool:
        return self._marker is None or self._marker.query()

    def stream_key(self) -> object:
        stream = self.torch.cuda.current_stream()
        return (getattr(stream, "device_index", None), stream.cuda_stream)
