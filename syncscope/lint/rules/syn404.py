from __future__ import annotations

import libcst as cst

from .. import provenance as P
from ._common import from_callers as _from_callers, is_index_selection, is_python_number, python_arg, show
from .base import Rule


class ScalarStoreAtIndex(Rule):
    """`t[i] = python_number` on a device tensor copies the number from the host with a blocking
    copy (a slice store `t[a:b] = 0` is a fill and does not block)."""

    code = "SYN404"
    name = "scalar-store-at-index"
    summary = "A Python number stored at an integer index of a device tensor"

    VALID = [
        "import torch\ndef f(x: torch.Tensor):\n    x[0:1] = 0\n",
        "import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    x[0] = y[3]\n",
        "def f(buf_np, n: int):\n    buf_np[0] = n\n",
        "def f(d):\n    d[0] = 1\n",  # nothing says d is a tensor
        # a 2-D device buffer: `buf[i] = 0` fills a row, no copy from the host
        "import torch\nclass Pool:\n    def __init__(self, n, device):\n        self.rows = torch.zeros((n, 4), device=device)\n"
        "class Alloc:\n    def clear(self, pool, req):\n        pool.rows[req.row] = 0\n",
        # the stored parameter: every call passes a device element, no Python number
        "import torch\nclass Pool:\n    def track(self, req, n, device):\n        buf = torch.full((n,), -1, device=device)\n"
        "        req.kv.buf = buf\n    def set_slot(self, req, idx: int, value):\n        req.kv.buf[idx] = value\n"
        "def step(pool, req, new):\n    pool.set_slot(req, 0, new[0])\n",
        # SGLang 0.5.23's fix of the same: only a tensor is stored; the -1 a caller passes is filled
        "import torch\nclass Pool:\n    def track(self, req, n, device):\n        buf = torch.full((n,), -1, device=device)\n"
        "        req.kv.buf = buf\n    def set_slot(self, req, idx: int, value):\n        if torch.is_tensor(value):\n"
        "            req.kv.buf[idx] = value\n        else:\n            req.kv.buf[idx].fill_(-1)\n"
        "def step(pool, req):\n    pool.set_slot(req, 0, -1)\n",
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor):\n    x[0] = 0\n",
        "import torch\ndef f(device):\n    out = torch.empty(4, device=device)\n    for i in range(4):\n        out[i] = i * 2\n",
        # SGLang 0.5.19 `alloc`: a 1-D device buffer of another class, indexed by a pool slot
        "import torch\nclass Pool:\n    def __init__(self, n, device):\n        self.cache_base = torch.zeros((n + 1,), dtype=torch.int32, device=device)\n"
        "class Alloc:\n    def alloc(self, pool, req):\n        pool.cache_base[req.kv.pool_idx] = 0\n",
        # SGLang 0.5.22 `set_mamba_ping_pong_slot`: the stored value is a parameter, a caller passes -1
        "import torch\nclass Pool:\n    def track(self, req, n, device):\n        buf = torch.full((n,), -1, device=device)\n"
        "        req.kv.buf = buf\n    def set_slot(self, req, idx: int, value):\n        req.kv.buf[idx] = value\n"
        "def step(pool, req):\n    pool.set_slot(req, 0, -1)\n",
    ]

    def on_subscript_store(self, ctx, target, base_where, value, value_where):
        if value is None:
            return
        arg = None if is_python_number(value, value_where) else python_arg(ctx, value, value_where)
        if arg is None and not is_python_number(value, value_where):
            return
        indices = ctx.analyzer.index_where(target, ctx)
        if P.is_tensor_like(base_where):
            if not indices or any(index is None or where != P.PY or isinstance(index, cst.Ellipsis)
                                  or (isinstance(index, cst.Name) and index.value == "None")
                                  for index, where in indices):
                return
            needs = None
        else:
            # an attribute the tree only ever gives 1-D device tensors (`self.write_pos =
            # torch.zeros((n,), device=d)`): any one index addresses one element, an int or a
            # 0-d tensor alike (SYN406 takes index tensors and lists)
            needs = ctx.device_field(target.value)
            if needs is None or len(indices) != 1:
                return
            index, where = indices[0]
            if index is None or isinstance(index, cst.Ellipsis) or where == P.HOST or ctx.is_bool(index) \
                    or is_index_selection(ctx, index, where) or (isinstance(index, cst.Name) and index.value == "None"):
                return
        ctx.report(
            self, target,
            f"`{show(target, ctx)} = {show(value, ctx)}` stores a Python number into a device tensor "
            "with a blocking copy (fill a slice, or write from a device tensor)" + _from_callers(arg),
            needs_device=needs, needs_vector=needs is not None, python_arg=arg,
        )
