from __future__ import annotations

from .. import provenance as P
from ._common import from_callers as _from_callers, is_index_selection, is_python_number, python_arg, show
from .base import Rule


class ScalarStoreThroughIndex(Rule):
    """`t[idx] = 0`, `t[rows, cols] = 1e9`, `t[:, idx] = 0`, `t[[1, 5]] = True` on a device
    tensor: a Python number stored through an index tensor or a list goes through `index_put_`,
    which first copies the number to the device with a blocking copy. Measured on torch 2.11
    (docs/sync-forms.md): with a device or a host long index, and with a list; not with a
    boolean mask on the device (a masked fill), not into a slice."""

    code = "SYN406"
    name = "scalar-store-through-index"
    summary = "A Python number stored into a device tensor through an index tensor or list"

    VALID = [
        # a boolean mask on the device: a masked fill, no copy from the host
        "import torch\ndef f(x: torch.Tensor, lens: torch.Tensor):\n    x[lens > 3] = 0\n",
        "import torch\ndef f(x: torch.Tensor, keep_mask: torch.Tensor):\n    x[keep_mask] = True\n",
        # a mask reshaped or indexed is still a mask (context.SHAPE_METHODS)
        "import torch\ndef f(x: torch.Tensor, lens: torch.Tensor):\n    x[(lens > 3).unsqueeze(-1).expand_as(x)] = 0\n",
        "import torch\ndef f(x: torch.Tensor, keep_mask: torch.Tensor):\n    x[keep_mask[:, None]] = 0\n",
        # the value is a device tensor: no host copy
        "import torch\ndef f(x: torch.Tensor, idx: torch.Tensor, v: torch.Tensor):\n    x[idx] = v\n",
        # the fix the engines use
        "import torch\ndef f(x: torch.Tensor, idx: torch.Tensor):\n    x.index_fill_(0, idx, 0)\n",
        # slices are fills
        "import torch\ndef f(x: torch.Tensor, n: int):\n    x[:n] = 0\n",
        # a host tensor indexed on the host
        "import torch\ndef f(buf_cpu: torch.Tensor, idx: torch.Tensor):\n    buf_cpu[idx] = 0\n",
        # a Python container
        "def f(slots: list, indices):\n    slots[indices] = 0\n",
        # the attribute is a host array in another class of the tree
        "import numpy as np, torch\nclass Pool:\n    def __init__(self, n, device):\n        self.write_pos = torch.zeros(n, device=device)\n"
        "class Mirror:\n    def __init__(self, n):\n        self.write_pos = np.zeros(n)\n"
        "def reset(owner, indices):\n    owner.write_pos[indices] = 0\n",
        # the owner's class keeps the field on the host (another class's field of that name is
        # on the device)
        "import torch\nclass Ring:\n    def __init__(self, n, device):\n        self.pos = torch.zeros(n, device=device)\n"
        "class Mirror:\n    def __init__(self, n):\n        self.pos = torch.zeros(n)\n"
        "    def reset(self, indices):\n        self.pos[indices] = 0\n",
    ]
    INVALID = [
        "import torch\ndef f(x: torch.Tensor, idx: torch.Tensor):\n    x[idx] = 0\n",
        "import torch\ndef f(device, spec_idx: torch.Tensor):\n    group = torch.full((8,), 2, device=device)\n    group[spec_idx] = 0\n",
        "import torch\ndef f(logits: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor):\n    logits[rows, cols] = -1e9\n",
        "import torch\ndef f(state: torch.Tensor, indices: torch.Tensor):\n    state[:, indices] = 0\n",
        "import torch\ndef f(x: torch.Tensor):\n    x[[1, 5, 7]] = True\n",
        "import torch\ndef f(x: torch.Tensor, ids_cpu: torch.Tensor):\n    x[ids_cpu] = 1\n",
        # SGLang 0.5.22 `alloc`: the pool's buffer is a device tensor made in another class
        "import torch\nclass Pool:\n    def __init__(self, n, device):\n        self.write_pos = torch.zeros(n, device=device)\n"
        "class Alloc:\n    def alloc(self, pool, reqs):\n        fresh_indices = [r.row for r in reqs]\n"
        "        pool.write_pos[fresh_indices] = 0\n",
        # SGLang 0.5.22 `MambaPool.clear_slots`: a device field of the owner's class, although a
        # config class has a field of the same name that is a shape
        "import torch\nclass Shape:\n    temporal: tuple[int, int]\nclass Pool:\n    class State:\n        temporal: torch.Tensor\n"
        "    def __init__(self, n, device):\n        t = torch.zeros((2, n), device=device)\n        self.cache = self.State(temporal=t)\n"
        "    def clear_slots(self, indices):\n        self.cache.temporal[:, indices] = 0\n",
    ]

    def on_subscript_store(self, ctx, target, base_where, value, value_where):
        if value is None:
            return
        arg = None if is_python_number(value, value_where) else python_arg(ctx, value, value_where)
        if arg is None and not is_python_number(value, value_where):
            return
        # a device tensor, or an attribute that the tree keeps only on the device (decided
        # once every file is read: `needs_device`)
        needs = None if P.is_tensor_like(base_where) else ctx.device_field(target.value)
        if not P.is_tensor_like(base_where) and needs is None:
            return
        indices = ctx.analyzer.index_where(target, ctx)
        selecting = [index for index, where in indices if is_index_selection(ctx, index, where)]
        if not selecting:
            return
        if any(index is not None and ctx.is_bool(index) for index, _ in indices):
            return  # a mask: a masked fill on the device (SYN102 covers host masks)
        ctx.report(
            self, target,
            f"`{show(target, ctx)} = {show(value, ctx)}` stores a Python number through the index "
            f"`{show(selecting[0], ctx)}`: `index_put_` copies it to the device with a blocking copy "
            "(use `index_fill_` / `masked_fill_`, or store a device tensor)" + _from_callers(arg),
            subject=target.value, needs_device=needs, python_arg=arg,
        )
