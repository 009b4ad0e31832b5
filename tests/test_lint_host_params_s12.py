"""Host data, session 12 (branch `s-host3`): four facts about where a value lives. Each VALID
package has INVALID twins that stay reported.

1. A keyword-only parameter (`def f(i, *, timesteps)`) is what its callers pass, as a
   positional one is. The rules' walk had tied a sync only to the positional parameters, so a
   `.item()` on a keyword-only one counted as a sync whatever every caller passed (SGLang's
   diffusion `_build_attn_metadata(..., *, timesteps)`, fed `timesteps_cpu =
   ctx.timesteps.cpu()`), and the run never asked the callers of a keyword-only parameter that
   a call passes its own parameter on to (`_fill_bound(*, out)` -> `_host_bound(lens, out=out)`).
2. `out.copy_(host)` copies to the device only when `out` is on the device: the destination
   decides, and where it is a parameter, the callers (SGLang's DFlash worker fills a
   `device="cpu"` buffer it hands down as `out=`).
3. A member of a tuple assignment read from host memory stays host in the call facts (below).
4. Any call told `device="cpu"` builds on the host (below).
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

HELPERS = """
import torch

def build_metadata(i: int, *, value: int | None = None, timesteps: torch.Tensor | None = None):
    if value is None or timesteps is None:
        raise ValueError("both are needed")
    n = len(timesteps) // 2
    return float(timesteps[n - 1].item() - 1)

def _host_bound(host_lens: torch.Tensor, out: torch.Tensor) -> None:
    lens = host_lens.to(dtype=torch.int64, device="cpu")
    out.copy_(torch.clamp(lens, max=8).to(torch.int32))

def fill_bound(*, lens_cpu: torch.Tensor, out: torch.Tensor) -> None:
    _host_bound(lens_cpu, out=out)
"""

STAGE = """
import torch
from torch import nn
from pkg.helpers import build_metadata, fill_bound

class Stage(nn.Module):
    def __init__(self):
        super().__init__()
        self._lens_cpu_buf = torch.empty((64,), dtype=torch.int32, device="cpu")

    def step_state(self, i: int, *, timesteps_cpu: torch.Tensor):
        return build_metadata(i, value=1, timesteps=timesteps_cpu)

    def forward(self, x: torch.Tensor, timesteps: torch.Tensor, lens_cpu: torch.Tensor):
        timesteps_cpu = timesteps.cpu()
        for i in range(4):
            x = x + self.step_state(i, timesteps_cpu=timesteps_cpu)
        out = self._lens_cpu_buf[:4]
        fill_bound(lens_cpu=lens_cpu, out=out)
        return x, out
"""


def lines(run, path: str) -> list[int]:
    return sorted({line for at, line, _ in where(run) if at == path})


def test_keyword_only_parameters_fed_host_data_are_no_sync(tmp_path):
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "stage.py": STAGE})
    assert lines(run, "pkg/helpers.py") == []
    # only the stage's own `.cpu()` (line 15) is left
    assert lines(run, "pkg/stage.py") == [15]


def test_keyword_only_parameter_given_device_data_is_reported(tmp_path):
    stage = STAGE.replace("timesteps=timesteps_cpu)", "timesteps=timesteps_cpu.to(x.device))")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "stage.py": stage})
    assert 12 in lines(run, "pkg/stage.py")  # SYN601 at the call passing a device tensor


def test_keyword_only_parameter_one_caller_feeds_the_device(tmp_path):
    # a second per-step module passes device data for both keyword-only parameters
    other = """
import torch
from torch import nn
from pkg.helpers import build_metadata, fill_bound

class Other(nn.Module):
    def forward(self, x: torch.Tensor, lens: torch.Tensor):
        out = torch.empty((4,), dtype=torch.int32, device=x.device)
        fill_bound(lens_cpu=lens, out=out)
        return build_metadata(0, value=1, timesteps=x)
"""
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "stage.py": STAGE, "other.py": other})
    assert lines(run, "pkg/other.py") == [9, 10]  # SYN601 at both calls passing device data
    assert lines(run, "pkg/stage.py") == [15]


def test_keyword_only_parameter_of_an_uncalled_entry_is_reported(tmp_path):
    # a per-step root nothing in the tree calls: its keyword-only parameter may be anything
    entry = """
import torch
from torch import nn
from pkg.helpers import build_metadata, fill_bound

class Entry(nn.Module):
    def forward(self, x: torch.Tensor, *, steps: torch.Tensor, out: torch.Tensor):
        fill_bound(lens_cpu=x.cpu(), out=out)
        return build_metadata(0, value=1, timesteps=steps)
"""
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "entry.py": entry})
    # SYN601 at both calls (SYN602 before: the helpers synced whatever they were given)
    assert lines(run, "pkg/entry.py") == [8, 9]


COPY = """
import torch
from torch import nn

def fill(out: torch.Tensor, lens_cpu: torch.Tensor) -> None:
    out.copy_(lens_cpu)

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.bound = torch.zeros(8, dtype=torch.int32, device="cpu")

    def forward(self, x: torch.Tensor, lens_cpu: torch.Tensor):
        fill(self.bound[:4], lens_cpu)
        return x
"""


def test_copy_into_a_host_buffer_the_callers_pass_is_no_sync(tmp_path):
    run = lint_package(tmp_path, {"runner.py": COPY})
    assert lines(run, "pkg/runner.py") == []


def test_copy_into_a_device_buffer_a_caller_passes_is_reported(tmp_path):
    runner = COPY.replace("fill(self.bound[:4], lens_cpu)", "fill(x[:4], lens_cpu)")
    run = lint_package(tmp_path, {"runner.py": runner})
    assert lines(run, "pkg/runner.py") == [6, 14]  # the copy, and SYN601 at the call


def test_copy_into_the_entrys_own_parameter_is_reported(tmp_path):
    # `forward` is a per-step root nothing in the tree calls: `x` may be a device tensor
    runner = COPY.replace("fill(self.bound[:4], lens_cpu)", "x[:4].copy_(lens_cpu)")
    run = lint_package(tmp_path, {"runner.py": runner})
    assert lines(run, "pkg/runner.py") == [14]


# 3. A member of a tuple assignment read from host memory keeps its place in the call facts, as
#    in the rules' walk (session 11, `h-tuple`): `logits, ids = (result.logits, result.next_ids)`
#    after a copy method moved `next_ids` to the host (copy_methods.py) hands host data on.
def _copied(tmp_path, member: str):
    from test_lint_copy_methods_s10 import MASKS, READER, RESULTS, UTIL

    reader = READER.replace("WAIT", "result.copy_done.synchronize()").replace(
        "        ids = result.next_ids.tolist()",
        f"        logits, ids, n = (result.logits, {member}, 3)\n        ids = self.normalize(ids=ids)") + """
    def normalize(self, *, ids):
        return ids.tolist() if torch.is_tensor(ids) else ids
"""
    files = {"util.py": UTIL, "masks.py": MASKS, "reader.py": reader,
             "results.py": RESULTS.replace("COPY", "_to_host").replace("RECORD", "self.copy_done.record()")}
    run = lint_package(tmp_path, files, include_cold=True)
    return sorted({line for path, line, code in where(run) if path == "pkg/reader.py" and code != "SYN501"})


def test_a_tuple_member_copied_to_the_host_is_host_for_the_callee(tmp_path):
    assert _copied(tmp_path, "result.next_ids") == [26]  # `result.scores.tolist()`, never copied


def test_a_tuple_member_left_on_the_device_is_reported(tmp_path):
    # the call (10) passes the device field on, and the callee's `.tolist()` (29) is reported
    assert _copied(tmp_path, "result.scores") == [10, 26, 29]


# 4. Any call told `device="cpu"` builds on the host, as a torch factory does: an object's
#    allocator (`req.grammar.allocate_vocab_mask(..., device="cpu")`, SGLang's speculative grammar
#    mask) whose class the linter cannot resolve.
GRAMMAR = """
import torch
from torch import nn

def traverse(bitmask: torch.Tensor, tokens: torch.Tensor):
    found = []
    for i in range(tokens.shape[0]):
        accepted = (bitmask[i] & (1 << (int(tokens[i]) % 32))) != 0
        if accepted:
            found.append(i)
    return found

def generate(reqs, tokens_cpu: torch.Tensor, vocab: int):
    mask = None
    for i, req in enumerate(reqs):
        if mask is None:
            mask = req.grammar.allocate_vocab_mask(vocab_size=vocab, batch_size=4, device="cpu")
        traverse(mask[i], tokens_cpu[i])
    return mask

class Worker(nn.Module):
    def forward(self, x: torch.Tensor, reqs: list, tokens_cpu: torch.Tensor):
        mask = generate(reqs, tokens_cpu, 100)
        return x, mask
"""


def test_a_call_told_the_cpu_device_builds_on_the_host(tmp_path):
    run = lint_package(tmp_path, {"grammar.py": GRAMMAR})
    assert lines(run, "pkg/grammar.py") == []


def test_a_call_told_another_device_is_reported(tmp_path):
    run = lint_package(tmp_path, {"grammar.py": GRAMMAR.replace('device="cpu")', 'device="cuda")')})
    assert lines(run, "pkg/grammar.py") == [9, 18, 23]  # the test, the call passing the mask, the chain
