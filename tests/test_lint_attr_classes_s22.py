"""A method called by name on a chain of fields whose classes the program cannot tell reaches only
methods of the classes every store into the last field's name gives (attr_classes.py): SGLang's
`self.tree_cache.req_to_token_pool.mamba_allocator.free(idx)` (`tree_cache` untyped) reached 36
`free` methods, the host pools' too, although the tree stores `.mamba_allocator` only ever as an
allocator it constructs."""

from __future__ import annotations

from test_lint_scope import lint_package, where

POOLS = """
    import torch

    class SlotAllocator:
        def __init__(self, size):
            self.slots = list(range(size))

        def free(self, index):
            self.slots.append(index)

    class DevicePool:
        def __init__(self):
            self.used = torch.zeros(8, device="cuda")

        def free(self, index):
            return int(self.used.sum().item())

    class ReqPool:
        def __init__(self, size):
            self.mamba_allocator = SlotAllocator(size)
"""

WIRING = """
    from pkg.pools import DevicePool, SlotAllocator

    def wire(req_pool, size):
        allocator = SlotAllocator(size)
        req_pool.mamba_allocator = allocator
"""

SCHEDULER = """
    from pkg.wiring import wire

    class Scheduler:
        def __init__(self, tree_cache):
            self.tree_cache = tree_cache

        def run_batch(self, batch):
            self.tree_cache.req_pool.mamba_allocator.free(batch)
"""

SYNC = ("pkg/pools.py", 16, "SYN201")


def _run(tmp_path, pools=POOLS, wiring=WIRING, scheduler=SCHEDULER, **overrides):
    return lint_package(tmp_path, {"pools.py": pools, "wiring.py": wiring, "scheduler.py": scheduler}, **overrides)


def test_a_field_name_stored_only_with_known_classes_limits_the_call(tmp_path):
    # VALID: every store into `.mamba_allocator` gives a SlotAllocator (constructed, or a local
    # bound to one): DevicePool.free never runs on that receiver
    assert where(_run(tmp_path)) == []
    # the sync is still found, as code nothing per step reaches
    assert SYNC in where(_run(tmp_path, include_cold=True))


def test_other_known_stores_keep_the_limit(tmp_path):
    # VALID: a parameter annotated with the class, a store of what another name holds, and a
    # store of no known class in a file for another platform (it never runs on CUDA)
    typed = WIRING + "\n    def attach(req_pool, allocator: SlotAllocator):\n        req_pool.mamba_allocator = allocator\n"
    assert where(_run(tmp_path, wiring=typed)) == []
    read = WIRING + "\n    def share(req_pool, other):\n        req_pool.mamba_allocator = other.spare_allocator\n" \
        "\n    def keep(holder):\n        holder.spare_allocator = SlotAllocator(4)\n"
    assert where(_run(tmp_path, wiring=read)) == []
    # a field passed along under its own name (`a.x = b.x`) holds what the other stores give
    along = WIRING + "\n    def share(req_pool, other):\n        req_pool.mamba_allocator = other.mamba_allocator\n"
    assert where(_run(tmp_path, wiring=along)) == []
    npu = "\n    def attach(req_pool, make):\n        req_pool.mamba_allocator = make()\n"
    run = lint_package(tmp_path, {"pools.py": POOLS, "wiring.py": WIRING, "scheduler.py": SCHEDULER,
                                  "npu/npu_wiring.py": npu})
    assert where(run) == []


def test_a_field_name_that_may_hold_another_class_keeps_the_call_open(tmp_path):
    # INVALID: each of these leaves DevicePool.free reachable from the per-step root
    # a store of a call's result, whose class cannot be told
    made = WIRING + "\n    def rewire(req_pool, make):\n        req_pool.mamba_allocator = make()\n"
    assert SYNC in where(_run(tmp_path, wiring=made))
    # a store of the syncing class itself
    pool = WIRING.replace("allocator = SlotAllocator(size)", "allocator = DevicePool()")
    assert SYNC in where(_run(tmp_path, wiring=pool))
    # a parameter without a class
    passed = WIRING + "\n    def attach(req_pool, allocator):\n        req_pool.mamba_allocator = allocator\n"
    assert SYNC in where(_run(tmp_path, wiring=passed))
    # a parameter annotated with a union that holds the syncing class
    union = WIRING.replace("from pkg.pools", "from typing import Union\n    from pkg.pools") + \
        "\n    def attach(req_pool, allocator: Union[SlotAllocator, DevicePool]):\n" \
        "        req_pool.mamba_allocator = allocator\n"
    assert SYNC in where(_run(tmp_path, wiring=union))
    # a local bound once to a construction and once to something else
    rebound = WIRING.replace("req_pool.mamba_allocator = allocator",
                             "allocator = allocator.clone()\n        req_pool.mamba_allocator = allocator")
    assert SYNC in where(_run(tmp_path, wiring=rebound))
    # a store of what another name holds, that name holding anything
    read = WIRING + "\n    def share(req_pool, other):\n        req_pool.mamba_allocator = other.spare_allocator\n"
    assert SYNC in where(_run(tmp_path, wiring=read))
    # a store by name, `setattr`
    named = WIRING + "\n    def attach(req_pool, allocator):\n        setattr(req_pool, 'mamba_allocator', allocator)\n"
    assert SYNC in where(_run(tmp_path, wiring=named))
    # a property of that name returns what its getter makes
    prop = POOLS + "\n    class View:\n        @property\n        def mamba_allocator(self):\n            return DevicePool()\n"
    assert SYNC in where(_run(tmp_path, pools=prop))
    # no store of that name at all: nothing is known
    bare = SCHEDULER.replace("mamba_allocator", "other_allocator")
    assert SYNC in where(_run(tmp_path, scheduler=bare))


# vLLM 0.33.0's Terratorch wrapper: `self.inference_runner = InferenceRunner(config)`, a class of
# the `terratorch` library, then `self.inference_runner.forward(**kwargs)` in its `forward`. The
# call reached every in-tree `forward` it could bind to (the attention backends' `impl.forward`),
# and fifteen attention findings named the wrapper as their per-step root. A field every store of
# which constructs a library class holds none of the tree's objects.
LIBRARY = """
    from abc import ABC

    import torch
    from torch import nn
    from runnerlib import InferenceRunner

    class Impl(ABC):  # no module: its `forward` is no root of its own
        def forward(self, layer, query, **kwargs):
            return int(query.sum().item())

    class Wrapper(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.inference_runner = {made}

        def forward(self, x, **kwargs):
            return self.inference_runner.forward(**kwargs)
"""


def test_a_field_only_constructed_from_a_library_class_reaches_no_tree_method(tmp_path):
    run = lint_package(tmp_path, {"model.py": LIBRARY.format(made="InferenceRunner(config)")}, include_cold=True)
    found = [f for f in run.findings if f.site.line == 10]
    assert found and all(f.cold for f in found)


def test_a_field_given_something_else_still_reaches_by_name(tmp_path):
    # a parameter declared with the library class may hold an in-tree subclass
    source = LIBRARY.format(made="runner").replace("def __init__(self, config):",
                                                   "def __init__(self, runner: InferenceRunner):")
    assert ("pkg/model.py", 10, "SYN201") in where(lint_package(tmp_path, {"model.py": source}))
