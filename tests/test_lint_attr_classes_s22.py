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
    # a store by name, `setattr`
    named = WIRING + "\n    def attach(req_pool, allocator):\n        setattr(req_pool, 'mamba_allocator', allocator)\n"
    assert SYNC in where(_run(tmp_path, wiring=named))
    # a property of that name returns what its getter makes
    prop = POOLS + "\n    class View:\n        @property\n        def mamba_allocator(self):\n            return DevicePool()\n"
    assert SYNC in where(_run(tmp_path, pools=prop))
    # no store of that name at all: nothing is known
    bare = SCHEDULER.replace("mamba_allocator", "other_allocator")
    assert SYNC in where(_run(tmp_path, scheduler=bare))
