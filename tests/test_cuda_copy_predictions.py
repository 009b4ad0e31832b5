"""The real-GPU detector records a predicted sync even when torch does not warn, so it must not
predict a copy that moves no element: ATen's copy_ returns before any transfer, and the host
does not wait. Hugging Face's DynamicCache starts each layer with `torch.tensor([],
device=...)`: the GPU run of the parity suite reported an h2d_copy there that never happened
(transformers/cache_utils.py:94-95). The predictions read metadata only, so they run here on the
CPU with tensors that report a CUDA device and hold no data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from syncscope.runtime import cuda
from syncscope.events import SyncKind as K

SPECS = {spec.api: spec for spec in cuda._shim_specs()}


class CudaShaped(torch.Tensor):
    """A tensor that reports a CUDA device and a shape and holds no data: any op on it fails the
    test (a prediction may read metadata only)."""

    @staticmethod
    def __new__(cls, *shape: int, dtype=torch.float32):
        return torch.Tensor._make_wrapper_subclass(cls, shape, dtype=dtype, device=torch.device("cuda"))

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise AssertionError(f"a prediction ran {func}: it may read metadata only")


def predict(api: str, *args, **kwargs):
    with cuda._no_subclass_hooks():  # as the shim calls it
        return SPECS[api].predict(args, kwargs)


EMPTY_DATA = [[], (), [[]], [[], []], ([], []), np.array([]), np.zeros((2, 0)), torch.empty(0), torch.empty(3, 0), [torch.empty(0)], range(0)]
DATA = [[1, 2], (1.5,), [[1], [2]], 5, 2.5, True, np.array([1]), np.float32(1.0), torch.ones(2), torch.tensor(3), range(2)]


@pytest.mark.parametrize("data", EMPTY_DATA, ids=repr)
def test_a_device_tensor_made_from_no_element_is_no_copy(data):
    assert predict("torch.tensor", data, device="cuda") is None
    assert predict("torch.tensor", data=data, device="cuda") is None
    assert predict("Tensor.new_tensor", CudaShaped(2), data) is None
    assert predict("Tensor.new_tensor", torch.ones(1), data, device="cuda:0") is None


@pytest.mark.parametrize("data", DATA, ids=repr)
def test_a_device_tensor_made_from_host_data_is_an_h2d_copy(data):
    assert predict("torch.tensor", data, device="cuda") == K.H2D_COPY
    assert predict("torch.tensor", data, device=torch.device("cuda", 0)) == K.H2D_COPY
    assert predict("Tensor.new_tensor", CudaShaped(2), data) == K.H2D_COPY
    assert predict("Tensor.new_tensor", torch.ones(1), data, device="cuda") == K.H2D_COPY
    # on the host: no copy to the device
    assert predict("torch.tensor", data) is None
    assert predict("torch.tensor", data, device="cpu") is None
    assert predict("Tensor.new_tensor", torch.ones(1), data) is None


def test_a_device_tensor_made_from_a_device_tensor_is_no_host_copy():
    assert predict("torch.tensor", CudaShaped(3), device="cuda") is None
    assert predict("Tensor.new_tensor", CudaShaped(2), CudaShaped(3)) is None
    # ... but a list of device scalars is read on the host, then copied back
    assert predict("torch.tensor", [CudaShaped(), CudaShaped()], device="cuda") == K.H2D_COPY


@pytest.mark.parametrize("data", [object(), "text", {1: 2}, None, [[1], []], [object()], float("nan")], ids=repr)
def test_odd_data_gives_an_answer_without_raising(data):
    # torch raises its own error for what it cannot convert; the prediction must not raise first
    assert predict("torch.tensor", data, device="cuda") in (None, K.H2D_COPY)
    assert predict("Tensor.new_tensor", CudaShaped(2), data) in (None, K.H2D_COPY)


def test_a_bad_device_is_left_to_torch():
    assert predict("torch.tensor", [1], device="no-such-device") is None
    assert predict("Tensor.new_tensor", torch.ones(1), [1], device=object()) is None


def test_a_non_blocking_copy_of_no_element_from_pageable_memory_is_no_sync():
    empty, full = torch.empty(0, 4), torch.ones(4)
    assert predict("Tensor.to", empty, "cuda", non_blocking=True) is None
    assert predict("Tensor.to", full, "cuda", non_blocking=True) == K.H2D_PAGEABLE
    assert predict("Tensor.cuda", empty, None, True) is None
    assert predict("Tensor.cuda", full, non_blocking=True) == K.H2D_PAGEABLE
    assert predict("Tensor.copy_", CudaShaped(0), empty, True) is None
    assert predict("Tensor.copy_", CudaShaped(4), full, non_blocking=True) == K.H2D_PAGEABLE
    assert predict("Tensor.copy_", torch.empty(0), CudaShaped(0), True) is None
    assert predict("Tensor.copy_", torch.empty(4), CudaShaped(4), True) == K.CPU_COPY


@pytest.mark.parametrize(
    "api,kind",
    [("Tensor.cpu", K.CPU_COPY), ("Tensor.numpy", K.CPU_COPY), ("Tensor.tolist", K.TOLIST), ("Tensor.item", K.ITEM), ("Tensor.__bool__", K.ITEM)],
)
def test_a_host_read_of_an_empty_device_tensor_is_no_sync(api, kind):
    assert predict(api, CudaShaped(0)) is None
    assert predict(api, CudaShaped(3, 0)) is None
    assert predict(api, CudaShaped(1)) == kind
    assert predict(api, CudaShaped()) == kind  # a 0-dim tensor holds one element
    assert predict(api, torch.ones(2)) is None  # on the host already
