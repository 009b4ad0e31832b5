"""A field filled by a static or class method called on a class (`self.meta = Meta.make(...)`)
holds the class that method returns, by its annotation or the one class it builds
(registry_fields.type_field, Program.field_class).

vLLM 0.33.0's LoRA wrapper keeps `self.token_mapping_meta = LoRAKernelMeta.make(...)` and unpacks
`no_lora_flag` from `self.token_mapping_meta.meta_args(...)`, whose tuple returns the host field
`no_lora_flag_cpu`: with the field's class unknown, `if no_lora_flag.item():` was taken for a
device read (punica_gpu.py:486)."""

from __future__ import annotations

from test_lint_host_facts import lint_package, where

META = """
import torch

class KernelMeta:
    def __init__(self, mapping: torch.Tensor, no_lora_flag_cpu: torch.Tensor):
        self.mapping = mapping
        self.no_lora_flag_cpu = no_lora_flag_cpu

    @staticmethod
    def make(n: int, device){annotation}:
        return KernelMeta(torch.zeros(n, device=device), torch.tensor([False], device="cpu"))

    def meta_args(self, n: int):
        return (self.mapping[:n], self.no_lora_flag_cpu)
"""

WRAPPER = """
import torch
from pkg.meta import KernelMeta

class Wrapper:
    def __init__(self, device):
        self.meta = KernelMeta.{maker}(4, device)

    def forward(self, x: torch.Tensor):
        mapping, no_lora_flag = self.meta.meta_args(x.size(0))
        if no_lora_flag.item():
            return None
        return x + mapping
"""

# `build` returns another class's object: the field holds that, and its `meta_args` syncs
OTHER = """
import torch

class DeviceMeta:
    def __init__(self, flag: torch.Tensor):
        self.flag = flag

    def meta_args(self, n: int):
        return (self.flag[:n], self.flag)
"""


BUILD = """
    @staticmethod
    def build(n: int, device) -> "DeviceMeta":
        return DeviceMeta(torch.ones(n, device=device))
"""


def lint(tmp_path, annotation: str = ' -> "KernelMeta"', maker: str = "make"):
    files = {"meta.py": META.format(annotation=annotation), "wrapper.py": WRAPPER.format(maker=maker)}
    return where(lint_package(tmp_path, files))


def test_a_field_made_by_an_annotated_static_method_holds_its_class(tmp_path):
    assert lint(tmp_path) == []


def test_a_field_made_by_a_static_method_holds_the_one_class_it_builds(tmp_path):
    assert lint(tmp_path, annotation="") == []


def test_a_field_made_by_a_maker_of_another_class_holds_that_class(tmp_path):
    # INVALID: `build` returns a DeviceMeta, whose `meta_args` gives a device flag: still a sync
    meta = META.format(annotation="").replace("import torch\n", "import torch\nfrom pkg.other import DeviceMeta\n", 1) \
        + BUILD
    files = {"meta.py": meta, "other.py": OTHER, "wrapper.py": WRAPPER.format(maker="build")}
    assert ("pkg/wrapper.py", 11, "SYN201") in where(lint_package(tmp_path, files))


def test_a_field_made_by_a_function_of_unknown_return_stays_unknown(tmp_path):
    # INVALID: nothing says what `load` returns, so the flag may be on the device
    meta = META.format(annotation="").replace("    def meta_args", "    @staticmethod\n    def load(n, device):\n"
                                                 "        return registry[n]\n\n    def meta_args")
    files = {"meta.py": meta, "wrapper.py": WRAPPER.format(maker="load")}
    assert ("pkg/wrapper.py", 11, "SYN201") in where(lint_package(tmp_path, files))
