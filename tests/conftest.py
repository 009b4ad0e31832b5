"""Shared test setup: `@pytest.mark.gpu` tests are skipped where torch sees no CUDA device, and
the signals the exit-path tests send reach their programs with default dispositions."""

import importlib.util
import signal

import pytest


def pytest_configure(config):
    # The exit-path tests send a program SIGINT/SIGHUP/SIGQUIT/SIGTERM and compare syncscope's run
    # with plain python's. A launcher that ignores those signals (nohup, a background job of a
    # non-interactive shell) passes SIG_IGN on to every child through exec, and then neither
    # program dies: give the children the dispositions a terminal gives them.
    for name in ("SIGHUP", "SIGQUIT", "SIGTERM", "SIGINT"):
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL)


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
