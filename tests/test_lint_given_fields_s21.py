"""A method called by name on a field its class only ever gives a parameter typed with one
in-tree class reaches only methods an object of that class may run (receivers.py `within`):
SGLang's `self.req_to_metadata_buffer_idx_allocator.free(idx)`, given only a
`ReqToMetadataIdxAllocator`, reached every `free` of the tree, the host pools' too. A parameter
typed with a union names no one class (ast_annotations.given_class): the field may hold either."""

from __future__ import annotations

from test_lint_scope import lint_package, where

POOLS = """
    import torch

    class BaseAllocator:
        def free(self, index):
            pass

    class MetaAllocator(BaseAllocator):
        def __init__(self):
            self.slots = []

        def free(self, index):
            self.slots.append(index)

    class DevicePool:
        def __init__(self):
            self.used = torch.zeros(8, device="cuda")

        def free(self, index):
            return int(self.used.sum().item())
"""

SCHEDULER = """
    from typing import Union
    from pkg.pools import BaseAllocator, DevicePool, MetaAllocator

    class Scheduler:
        def __init__(self, allocator: ANNOTATION):
            self.allocator = allocator

        def run_batch(self, batch):
            self.allocator.free(batch)
"""

MIXED = """
    import torch

    class MetaAllocator:
        def __init__(self):
            self.slots = []

    class DevicePool:
        def __init__(self):
            self.used = torch.zeros(8, device="cuda")

        def free(self, index):
            return int(self.used.sum().item())

    class Mixed(MetaAllocator, DevicePool):
        pass
"""

SYNC = ("pkg/pools.py", 20, "SYN201")


def _run(tmp_path, annotation="MetaAllocator", pools=POOLS, scheduler=SCHEDULER, **overrides):
    return lint_package(tmp_path, {"pools.py": pools, "scheduler.py": scheduler.replace("ANNOTATION", annotation)},
                        **overrides)


def test_a_field_given_one_typed_class_reaches_only_that_family(tmp_path):
    # VALID: `self.allocator` only ever holds a MetaAllocator: DevicePool.free never runs there
    assert where(_run(tmp_path)) == []
    # the sync is still found, as code nothing per step reaches
    assert SYNC in where(_run(tmp_path, include_cold=True))


def test_a_field_that_may_hold_the_syncing_class_still_reaches_it(tmp_path):
    # INVALID: each of these keeps DevicePool.free reachable from the per-step root
    # a union names both classes
    assert SYNC in where(_run(tmp_path, annotation="Union[MetaAllocator, DevicePool]"))
    assert SYNC in where(_run(tmp_path, annotation="MetaAllocator | DevicePool"))
    # a base class whose subclass is the syncing one
    subclassed = POOLS.replace("class DevicePool:", "class DevicePool(BaseAllocator):")
    assert SYNC in where(_run(tmp_path, annotation="BaseAllocator", pools=subclassed))
    # a method a subclass inherits from another base (a mixin beside the typed class)
    assert ("pkg/pools.py", 13, "SYN201") in where(_run(tmp_path, pools=MIXED))
    # the field is also given something that is not a typed parameter
    untyped = SCHEDULER.replace("self.allocator = allocator", "self.allocator = allocator\n\n"
                                "        def reset(self, other):\n            self.allocator = other")
    assert SYNC in where(_run(tmp_path, scheduler=untyped))
