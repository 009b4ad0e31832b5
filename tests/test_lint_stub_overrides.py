"""A call resolved by a declared class to a stub runs an override in that class's family, and a
local bound once to a field is a call on that field (stubs.py, receivers.py, field_locals.py).

SGLang 0.5.23's beam search frees orphaned KV slots with `allocator =
self.token_to_kv_pool_allocator; allocator.free(orphans)`, the field declared as
`BaseTokenToKVPoolAllocator`, whose `free` raises NotImplementedError. The local had no class, so
the call reached every `free` of the tree, the host pools' among them (their `.cpu()` of their
own host indices, reported per step); a call on the field itself reached only the stub, so the
allocators' syncs were never reached through it. Now the overrides are reached (their own syncs
run per step), and the call is not reported as reaching them: it may run another override."""

from __future__ import annotations

from test_lint_host_facts import lint_package, where

ALLOC = """
import abc
import torch

class BaseAllocator(abc.ABC):
    def free(self, index: torch.Tensor):
        {stub}

class DeviceAllocator(BaseAllocator):
    def free(self, index: torch.Tensor):
        return torch.unique(index)

class HostPool:
    def free(self, indices):
        return indices.cpu()

def make():
    return HostPool()
"""

COORDINATOR = """
import torch
from pkg.alloc import BaseAllocator

class Coordinator:
    allocator: BaseAllocator

    def forward(self, mapping: torch.Tensor):
{body}
"""

# another class stores into a field of the same name something of no known class, so the name
# alone (attr_classes.py) says nothing of what `allocator` holds: only the declaration does
OTHER = """
from pkg.alloc import make

class Holder:
    def __init__(self):
        self.allocator = make()
"""

THROUGH_A_LOCAL = "        allocator = self.allocator\n        allocator.free(mapping)"
ON_THE_FIELD = "        self.allocator.free(mapping)"


def lint(tmp_path, body: str, stub: str = "raise NotImplementedError()"):
    files = {"alloc.py": ALLOC.format(stub=stub), "coordinator.py": COORDINATOR.format(body=body), "other.py": OTHER}
    return [(path.rsplit("/", 1)[-1], line, code) for path, line, code in where(lint_package(tmp_path, files))]


def test_a_call_on_a_field_declared_with_a_stub_reaches_the_overrides(tmp_path):
    # before: resolved to the stub alone, nothing was found
    assert lint(tmp_path, ON_THE_FIELD) == [("alloc.py", 11, "SYN105")]


def test_a_local_bound_to_the_field_is_the_field(tmp_path):
    # before: `allocator` had no class, so `free` reached HostPool.free too (its `.cpu()`)
    assert lint(tmp_path, THROUGH_A_LOCAL) == [("alloc.py", 11, "SYN105")]


def test_an_abstractmethod_and_an_ellipsis_are_stubs(tmp_path):
    for stub in ("...", '"""Free the slots."""\n        pass'):
        assert [code for _, _, code in lint(tmp_path, ON_THE_FIELD, stub=stub)] == ["SYN105"]
    decorated = ALLOC.replace("    def free(self, index: torch.Tensor):\n        {stub}",
                              "    @abc.abstractmethod\n    def free(self, index: torch.Tensor):\n        return None", 1)
    files = {"alloc.py": decorated, "coordinator.py": COORDINATOR.format(body=ON_THE_FIELD), "other.py": OTHER}
    assert ("pkg/alloc.py", 12, "SYN105") in where(lint_package(tmp_path, files))


def test_a_base_method_that_does_something_runs_itself(tmp_path):
    # INVALID for the overrides: a concrete method of the declared class is what the call runs
    assert lint(tmp_path, ON_THE_FIELD, stub="return index") == []


def test_a_local_bound_twice_stands_for_nothing(tmp_path):
    # INVALID for the alias: the second binding may hold anything, so the call is by name again
    body = "        allocator = self.allocator\n        if mapping.dim() > 1:\n            allocator = make()\n" \
           "        allocator.free(mapping)"
    found = lint(tmp_path, body)
    assert ("alloc.py", 15, "SYN203") in found and ("alloc.py", 11, "SYN105") in found
