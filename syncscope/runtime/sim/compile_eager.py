"""`torch.compile` on the simulated device: run eagerly, say so once.

Dynamo traces Python bytecode and would trace into the simulated device itself (its torch-function
mode, the fake `torch.cuda` functions it has tables for), and Inductor would generate CUDA/Triton
code for a device that is not there; either ends in a dynamo traceback. While the simulated device
is installed, `torch.compile(fn)` (also as a decorator, with or without options) and
`module.compile()` hand back the function or module itself, so it runs eagerly on the simulated
tensors: the same outputs as eager (what compiled code must give anyway) and the syncs eager code
has. A sync that a GPU would compile away (or move to a graph break) is therefore reported where
eager code has it; one notice on stderr says so.
"""

from __future__ import annotations

import sys

import torch

NOTICE = (
    "syncscope simulated device: torch.compile is not simulated; compiled functions run eagerly "
    "(same outputs; syncs are reported where eager code has them). Run on a GPU "
    "(`syncscope run --device cuda`) to see the compiled code's syncs."
)
_noticed = [False]


def _notice() -> None:
    if not _noticed[0]:
        _noticed[0] = True
        print(NOTICE, file=sys.stderr, flush=True)


def eager_compile(model=None, **options):
    """Stands in for `torch.compile`: returns `model` unchanged (or a decorator that does)."""
    _notice()
    if model is None:
        return lambda fn: fn
    return model


def _module_compile(self, *args, **kwargs) -> None:
    _notice()


def install(p) -> None:
    _noticed[0] = False
    p.set(torch, "compile", eager_compile)
    p.set(torch.nn.Module, "compile", _module_compile)
