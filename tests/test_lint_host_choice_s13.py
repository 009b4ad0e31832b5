"""Host data, session 13 (branch `s-host4`): a device a parameter picks.

1. `device = torch.device("cuda" if not force_cpu_device else "cpu")`, a local bound once to a
   choice between `"cpu"` and something else tested on a parameter, is a GPU only under that
   test. The lines that build on it and those that only read what was built on it are one more
   guarded block (constargs.py): a call that leaves `force_cpu_device` at its default `True` is
   ruled out, and a line no per-step call takes is cold (SGLang's `broadcast_pyobj`).
   INVALID twins: a caller passing `force_cpu_device=False` (or a value not known), a line that
   also reads something else, a local bound twice.
"""

from __future__ import annotations

import ast
import textwrap

from syncscope.lint.constargs import compile_test
from syncscope.lint.device_choice import chosen_device_guards
from test_lint_scope import lint_package, where

COMM = """
import pickle

import numpy as np
import torch
import torch.distributed as dist


def broadcast_pyobj(data, rank, dist_group=None, src=0, force_cpu_device: bool = True):
    device = torch.device("cuda" if torch.cuda.is_available() and not force_cpu_device else "cpu")
    if rank == src:
        size = len(data)
        tensor_size = torch.tensor([size], dtype=torch.long, device=device)
        dist.broadcast(tensor_size, src=src, group=dist_group)
        return data
    tensor_size = torch.tensor([0], dtype=torch.long, device=device)
    dist.broadcast(tensor_size, src=src, group=dist_group)
    size = tensor_size.item()
    tensor_data = torch.empty(size, dtype=torch.uint8, device=device)
    dist.broadcast(tensor_data, src=src, group=dist_group)
    serialized = bytes(tensor_data.cpu().numpy())
    return pickle.loads(serialized)
"""

MODEL = """
import torch
from torch import nn
from pkg.comm import broadcast_pyobj


class Model(nn.Module):
    def forward(self, x: torch.Tensor, reqs, rank: int):
        reqs = broadcast_pyobj(reqs, rank{args})
        return x
"""


def _run(tmp_path, args="", comm=COMM, **overrides):
    return lint_package(tmp_path, {"comm.py": comm, "model.py": MODEL.format(args=args)}, **overrides)


def test_a_device_left_on_the_cpu_by_every_caller_is_no_sync(tmp_path):
    assert where(_run(tmp_path)) == []


def test_the_same_with_the_default_passed_explicitly(tmp_path):
    assert where(_run(tmp_path, ", force_cpu_device=True")) == []


def test_the_lines_are_cold_not_gone(tmp_path):
    run = _run(tmp_path, include_cold=True)
    lines = {f.site.line for f in run.findings if f.site.path == "pkg/comm.py"}
    assert {13, 16, 18, 21} <= lines
    assert all(f.cold for f in run.findings)


def test_invalid_a_caller_asking_for_the_gpu_keeps_every_sync(tmp_path):
    found = where(_run(tmp_path, ", force_cpu_device=False"))
    assert {line for path, line, _ in found if path == "pkg/comm.py"} >= {13, 16, 18, 21}
    assert ("pkg/model.py", 9, "SYN602") in found


def test_invalid_a_caller_passing_an_unknown_flag_keeps_the_syncs(tmp_path):
    model = MODEL.replace("rank: int)", "rank: int, on_cpu: bool)")
    run = lint_package(tmp_path, {"comm.py": COMM, "model.py": model.format(args=", force_cpu_device=on_cpu")})
    assert ("pkg/model.py", 9, "SYN602") in where(run)


def test_invalid_a_line_reading_another_tensor_is_no_guard(tmp_path):
    comm = COMM.replace("size = tensor_size.item()", "size = tensor_size.item() + data[0].item()")
    assert ("pkg/comm.py", 18, "SYN201") in where(_run(tmp_path, comm=comm))


def _guards(source):
    function = ast.parse(textwrap.dedent(source)).body[0]
    params = frozenset(a.arg for a in function.args.args)
    return [(start, end) for start, end, _ in chosen_device_guards(function, params, compile_test)]


def test_only_a_local_bound_once_to_a_choice_on_a_parameter_counts():
    chosen = """
    def f(x, on_cpu=True):
        device = "cpu" if on_cpu else "cuda"
        t = torch.zeros(4, device=device)
        return t.tolist()
    """
    assert _guards(chosen) == [(4, 4), (5, 5)]
    twice = chosen.replace("        t = torch", "        device = get_device()\n        t = torch")
    assert _guards(twice) == []
    no_param = chosen.replace('"cpu" if on_cpu', '"cpu" if FLAG')
    assert _guards(no_param) == []
    both_gpu = chosen.replace('"cpu" if on_cpu', '"cuda:1" if on_cpu')
    assert _guards(both_gpu) == []


def test_invalid_a_local_also_bound_by_a_loop_is_not_built_on_the_device():
    looped = """
    def f(xs, on_cpu=True):
        device = "cpu" if on_cpu else "cuda"
        t = torch.zeros(4, device=device)
        for t in xs:
            pass
        return t.tolist()
    """
    assert _guards(looped) == [(4, 4)]


def test_invalid_a_store_into_another_object_is_no_block():
    stored = """
    def f(buf, on_cpu=True):
        device = "cpu" if on_cpu else "cuda"
        t = torch.zeros(4, device=device)
        buf[0] = t
        n = t.sum()
        return n
    """
    assert _guards(stored) == [(4, 4), (6, 6)]
