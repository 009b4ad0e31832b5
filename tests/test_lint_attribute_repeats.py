"""`torch.repeat_interleave(x, repeats=self.n)`: repeats read as an attribute count only where the
tree keeps that attribute on the device (rules/syn104.py).

SGLang 0.5.23's DSA attention backend repeats its page indices by
`self.speculative_num_draft_tokens`, a count copied from the configuration in `__init__`
(`get_spec().speculative_num_draft_tokens`). The function form of `repeat_interleave` reported
any repeats whose place it did not know, so five calls and the call sites above them were
findings; readers judged all of them "not a sync". VALID: no module of the package stores a
device tensor in that attribute, and the call is no finding. INVALID twins: another module keeps
the attribute on the device (the tree decides across files, as for `if self.flag:`; the
function's callers are then told, SYN602: the whole-program pass keeps the root exactly where the
finding holds), or the repeats are a local whose place is unknown (reported as before).
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

BACKEND = """
import torch
from torch import nn

from pkg.config import get_spec


class Backend(nn.Module):
    def __init__(self, req_to_token: torch.Tensor):
        super().__init__()
        self.req_to_token = req_to_token
        self.num_draft = get_spec().num_draft

    def forward(self, pool_idx: torch.Tensor):
        pages = self.req_to_token[pool_idx, :64]
        return torch.repeat_interleave(pages, repeats={repeats}, dim=0)

    def verify(self, pool_idx: torch.Tensor):
        return self.forward(pool_idx) + 1
"""

CONFIG = """
class _Bag:
    def __init__(self, values):
        self.__dict__.update(values)


def get_spec():
    return _Bag({"num_draft": 4})
"""

# a verifier elsewhere in the tree that keeps its `num_draft` on the device
VERIFIER = """
import torch


class Verifier:
    def __init__(self, lens, device):
        self.num_draft = torch.tensor(lens, device=device)
"""

REPEAT = ("pkg/backend.py", 16, "SYN104")
CALLER = ("pkg/backend.py", 19, "SYN602")  # `verify` calls `forward`, whose repeat syncs


def package(repeats="self.num_draft", verifier=False):
    files = {"backend.py": BACKEND.format(repeats=repeats), "config.py": CONFIG}
    if verifier:
        files["verifier.py"] = VERIFIER
    return files


def test_a_count_kept_in_a_field_is_no_tensor_repeats(tmp_path):
    found = where(lint_package(tmp_path, package(), include_cold=True, hot_roots=["verify"]))
    assert REPEAT not in found and CALLER not in found, found


def test_the_same_field_kept_on_the_device_in_another_module_is_reported(tmp_path):
    # and the function's callers are told: the pass keeps the root where the finding holds
    found = where(lint_package(tmp_path, package(verifier=True), hot_roots=["verify"]))
    assert REPEAT in found and CALLER in found, found


def test_repeats_of_unknown_place_that_are_no_attribute_are_still_reported(tmp_path):
    body = BACKEND.replace("        pages = ", "        reps = self.num_draft * 1\n        pages = ")
    run = lint_package(tmp_path, {"backend.py": body.format(repeats="reps"), "config.py": CONFIG})
    assert ("pkg/backend.py", 17, "SYN104") in where(run)
