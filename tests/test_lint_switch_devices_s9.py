"""Devices a switch picks (session 9). Each VALID package has an INVALID twin that stays reported.

- A field built on a local device bound only to device literals, whose GPU arm runs only when an
  environment variable that the tree declares off (`X = EnvStr(None)`) and never sets is on, is
  host data under the default configuration (SGLang's PD `MetadataBuffers`,
  `disaggregation/utils.py`); so is a field built on `self.that_field.device`. An arm for another
  platform (`if is_npu():`) never runs on CUDA.
- A method called on a field that is only ever given a parameter typed with one in-tree class
  (`self.bufs = bufs`, `bufs: Buffers`) returns where that class's method says (SGLang's
  `DecodeTransferQueue.metadata_buffers.get_buf(idx)`).
"""

from __future__ import annotations

from test_lint_host_facts import lint_package, where

ENVIRON = """
class EnvField:
    def __init__(self, default):
        self.default = default

    def get(self):
        return self.default


class EnvStr(EnvField):
    pass


class Envs:
    APP_CUSTOM_POOL = EnvStr(DEFAULT)


envs = Envs()
"""

BUFFERS = """
import torch

from pkg.environ import envs


def is_npu():
    return False


class Buffers:
    def __init__(self, size: int, pool=None):
        device = "cpu"
        if is_npu():
            device = "npu"
        elif pool:
            device = "cpu"
        elif GPU_TEST:
            device = "cuda"
        self.ids = torch.zeros((size, 16), dtype=torch.int32, device=device)
        self.room = torch.zeros((size, 8), dtype=torch.int64, device=device)
        self.checksum = None
        if size > 4:
            self.checksum = torch.zeros((size, 8), device=self.room.device)

    def get_buf(self, idx: int):
        return self.ids[idx].clone(), self.room[idx].clone()

    def get_checksum(self, idx):
        a, b = self.checksum[idx, :2].tolist()
        return a, b
"""

QUEUE = """
from pkg.bufs import Buffers


class Queue:
    def __init__(self, bufs: Buffers):
        self.bufs = bufs

    def step(self, idx):
        ids, room = self.bufs.get_buf(idx)
        digest, _ = self.bufs.get_checksum(idx)
        return ids[0].item() + room[1].item() + digest
"""

ENV_TEST = 'envs.APP_CUSTOM_POOL.get() == "NVLINK"'


def findings(tmp_path, default="None", test=ENV_TEST, extra=""):
    files = {"environ.py": ENVIRON.replace("DEFAULT", default),
             "bufs.py": BUFFERS.replace("GPU_TEST", test), "queue_.py": QUEUE + extra}
    return where(lint_package(tmp_path, files))


def test_a_device_only_a_switch_off_by_default_picks_is_the_host(tmp_path):
    assert findings(tmp_path) == []


def test_a_switch_on_by_default_picks_the_gpu(tmp_path):
    found = findings(tmp_path, default='"NVLINK"')
    assert ("pkg/queue_.py", 12, "SYN201") in found
    assert ("pkg/bufs.py", 30, "SYN202") in found


def test_a_switch_the_tree_turns_on_is_no_default(tmp_path):
    turned_on = '\n\ndef setup():\n    from pkg.environ import envs\n    envs.APP_CUSTOM_POOL.set("NVLINK")\n'
    found = findings(tmp_path, extra=turned_on)
    assert ("pkg/queue_.py", 12, "SYN201") in found
    assert ("pkg/bufs.py", 30, "SYN202") in found


def test_a_test_on_data_is_no_switch(tmp_path):
    found = findings(tmp_path, test="size > 1024")
    assert ("pkg/queue_.py", 12, "SYN201") in found
    assert ("pkg/bufs.py", 30, "SYN202") in found


def test_another_platform_arm_alone_leaves_the_host(tmp_path):
    # no GPU arm at all but the NPU one, ruled out on CUDA: host whatever the environment says
    assert findings(tmp_path, default='"NVLINK"', test="False and is_npu()") == []


def test_a_subclass_overriding_the_method_keeps_the_call_unknown(tmp_path):
    override = ("\n\nimport torch\nfrom pkg.bufs import Buffers as _B\n\n\nclass GpuBuffers(_B):\n"
                "    def get_buf(self, idx):\n        return torch.ones(2, device='cuda'), torch.ones(2, device='cuda')\n")
    found = findings(tmp_path, extra=override)
    assert ("pkg/queue_.py", 12, "SYN201") in found
    assert not any(at == "pkg/bufs.py" for at, _, _ in found)
