"""Shared test setup: `@pytest.mark.gpu` tests are skipped where torch sees no CUDA device."""

import importlib.util

import pytest


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    if any(item.get_closest_marker("gpu") for item in items) and not _cuda_available():
        skip = pytest.mark.skip(reason="needs a CUDA device (run the GPU suite on the device machine)")
        for item in items:
            if item.get_closest_marker("gpu"):
                item.add_marker(skip)
