"""What a CUDA tensor call does to the host, from its arguments: which kind of sync it is
(classify, on torch's sync warning) and whether it is certain to sync before it runs (predict).
Metadata reads only (device, dtype, pinned flag, element count), never data: nothing here syncs.
Used by the CUDA detectors (runtime/cuda.py, runtime/quiet_cuda.py)."""

from __future__ import annotations

from typing import Any, Callable

import torch

from syncscope.events import SyncKind as K

# -- classifying a call from its arguments (metadata reads only, never data) -------------------
def _is_cuda_tensor(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.is_cuda


def _index_parts(index: Any) -> tuple:
    return index if isinstance(index, tuple) else (index,)


def _classify_getitem(args, kwargs) -> str:
    for part in _index_parts(args[1]):
        if isinstance(part, torch.Tensor):
            if part.dtype in (torch.bool, torch.uint8) and part.is_cuda:
                return K.BOOL_MASK_INDEX
            if not part.is_cuda:
                return K.HOST_INDEX
        elif isinstance(part, (list, tuple)):
            return K.HOST_INDEX
    return K.OTHER


def _predict_getitem(args, kwargs) -> str | None:
    # The seeds' main case, known before the call so it gets a full NVTX range: a read through a
    # device boolean mask must learn the output size from the device.
    index = args[1]
    if isinstance(index, torch.Tensor) and index.dtype is torch.bool and index.is_cuda and args[0].is_cuda:
        return K.BOOL_MASK_INDEX
    return None


def _classify_setitem(args, kwargs) -> str:
    value = args[2]
    for part in _index_parts(args[1]):
        if isinstance(part, torch.Tensor):
            if part.dtype in (torch.bool, torch.uint8):
                return K.BOOL_MASK_INDEX if part.is_cuda else K.HOST_INDEX
            if not part.is_cuda:
                return K.HOST_INDEX
    if isinstance(value, torch.Tensor) and not value.is_cuda and value.dim() > 0:
        return K.H2D_COPY
    if isinstance(value, (int, float, bool)):
        return K.SCALAR_STORE
    return K.OTHER


def _target_is_cuda(args, kwargs) -> bool | None:
    """Where `Tensor.to(...)` sends the tensor: True (cuda), False (cpu) or None (unchanged)."""
    for value in list(args[1:]) + [kwargs.get("device")]:
        if isinstance(value, torch.Tensor):
            return value.is_cuda
        if isinstance(value, (str, torch.device, int)) and not isinstance(value, bool):
            try:
                return torch.device(value).type == "cuda"
            except (RuntimeError, TypeError):
                continue
    return None


def _classify_to(args, kwargs) -> str:
    target_cuda = _target_is_cuda(args, kwargs)
    if args[0].is_cuda and target_cuda is False:
        return K.CPU_COPY
    if not args[0].is_cuda and target_cuda:
        return K.H2D_COPY
    return K.OTHER


def _classify_copy(args, kwargs) -> str:
    dst, src = args[0], args[1]
    if dst.is_cuda and isinstance(src, torch.Tensor) and not src.is_cuda:
        return K.H2D_COPY
    if not dst.is_cuda and _is_cuda_tensor(src):
        return K.CPU_COPY
    return K.OTHER


def _non_blocking(args, kwargs, position: int) -> bool:
    if "non_blocking" in kwargs:
        return bool(kwargs["non_blocking"])
    return len(args) > position and isinstance(args[position], bool) and args[position]


_Uninitialized = torch.nn.parameter.UninitializedTensorMixin


def _pageable_host(t: Any) -> bool:
    """Plain CPU memory that is not pinned. A lazy module's placeholder parameter has no memory
    at all (and raises on `is_pinned`): it is no copy source or destination to warn about."""
    return isinstance(t, torch.Tensor) and not isinstance(t, _Uninitialized) and t.device.type == "cpu" and not t.is_pinned()


def _pageable_h2d(src: Any) -> bool:
    return _pageable_host(src)


# -- a copy of no element is no transfer -----------------------------------------------------------
# ATen's copy_ returns before any transfer when there is no element, so the host does not wait
# (and torch does not warn). The predictions below record without a warning, so they must not
# predict such a copy: Hugging Face's DynamicCache starts each layer with
# `torch.tensor([], device=...)`, which the GPU run reported as an h2d_copy (the parity suite).
# A wrong answer here only loses the prediction: torch's own warning still marks a real sync.
def _holds_elements(t: torch.Tensor) -> bool:
    try:
        return t.numel() != 0
    except Exception:  # a subclass that cannot tell: predict as for any tensor
        return True


def _no_element(data: Any) -> bool:
    """Is this copy source empty? Nested lists and tuples (rectangular, as torch requires: the
    first item of each level stands for its level), ranges, tensors and numpy arrays. Anything
    else (a number, an odd object) counts as holding elements; never raises."""
    for _ in range(64):  # torch refuses deeper nesting long before this
        if isinstance(data, (list, tuple)):
            if not data:
                return True
            data = data[0]
            continue
        if isinstance(data, torch.Tensor):
            return not _holds_elements(data)
        if isinstance(data, range):
            return not data
        size = getattr(data, "size", None) if type(data).__module__ == "numpy" else None
        return size == 0
    return False


def _predict_to(args, kwargs) -> str | None:
    # A non_blocking copy from pageable memory blocks in the driver; torch's debug mode misses it.
    if _pageable_h2d(args[0]) and _target_is_cuda(args, kwargs) and kwargs.get("non_blocking") and _holds_elements(args[0]):
        return K.H2D_PAGEABLE
    return None


def _predict_cuda(args, kwargs) -> str | None:
    if _pageable_h2d(args[0]) and _non_blocking(args, kwargs, 2) and _holds_elements(args[0]):
        return K.H2D_PAGEABLE
    return None


def _predict_copy(args, kwargs) -> str | None:
    dst, src = args[0], args[1]
    if not _non_blocking(args, kwargs, 2) or not _holds_elements(dst):  # copy_ checks the destination's size
        return None
    if dst.is_cuda and _pageable_h2d(src):
        return K.H2D_PAGEABLE
    if _is_cuda_tensor(src) and _pageable_host(dst):
        return K.CPU_COPY  # non_blocking into pageable host memory cannot be asynchronous
    return None


def _always(kind: str) -> Callable:
    """For calls that always wait when they touch the device (reads of device data to the host,
    explicit synchronizations)."""

    def predict(args, kwargs) -> str | None:
        if not args:
            return kind
        self = args[0]
        # An empty tensor has nothing to read (its host copy moves no element): no wait.
        return kind if _is_cuda_tensor(self) and _holds_elements(self) else None

    return predict


def _fixed(kind: str) -> Callable:
    return lambda args, kwargs: kind


def _host_data_to_device(data: Any) -> bool:
    """Does building a device tensor from `data` copy host memory to the device? Not when there
    is no element, nor from a tensor already on a GPU (a device-to-device copy)."""
    if _is_cuda_tensor(data):
        return False
    return not _no_element(data)


def _on_cuda(device: Any) -> bool:
    try:
        return torch.device(device).type == "cuda"
    except (RuntimeError, TypeError, ValueError):
        return False  # torch raises its own error for a bad device


def _predict_factory(args, kwargs) -> str | None:
    device = kwargs.get("device")
    if device is None or not _on_cuda(device):
        return None
    data = args[0] if args else kwargs.get("data")
    return K.H2D_COPY if _host_data_to_device(data) else None


def _predict_new_tensor(args, kwargs) -> str | None:
    device = kwargs.get("device")
    on_cuda = args[0].is_cuda if device is None else _on_cuda(device)
    if not on_cuda:
        return None
    data = args[1] if len(args) > 1 else kwargs.get("data")
    return K.H2D_COPY if _host_data_to_device(data) else None
