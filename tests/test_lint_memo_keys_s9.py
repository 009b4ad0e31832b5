"""Memo fills told by what the block stores and what its key is built of (memo.py, memo_keys.py):
a lazy `register_buffer` behind `not hasattr(self, "a")` (vLLM's MoonViT rope table), a pointer
table rebuilt when `self._addresses != pointers` and a `self._meta.get(key)` miss whose key holds
only the addresses and layouts of the object's own buffers (vLLM's DFlash2 context store, SGLang's
conv-window scatter). Small package: the module in one file, the helper that syncs in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where

HELPERS = """
    import torch

    def pointer_table(pointers, device) -> torch.Tensor:
        table = torch.tensor(pointers, dtype=torch.int64, device=device)
        top = int(table.max().item())
        return table[: top + 1]
"""

REGISTER = """
    import torch
    from pkg.helpers import pointer_table

    class Rope(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.n = 4

        def forward(self, x: torch.Tensor):
            if not hasattr(self, "freqs"):
                self.register_buffer("freqs", pointer_table([0, 1, 2], x.device), persistent=False)
            return x + self.freqs
"""

ADDRESSES = """
    import torch
    from pkg.helpers import pointer_table

    class Store(torch.nn.Module):
        def __init__(self, layers):
            super().__init__()
            self.layers = layers
            self._addresses = None
            self._ptrs = None

        def forward(self, x: torch.Tensor, n: int):
            caches = [layer.attn.kv_cache for layer in self.layers]
            pointers = tuple(c.data_ptr() for c in caches)
            if self._addresses != pointers:
                self._ptrs = pointer_table(pointers, x.device)
                self._addresses = pointers
            return x + self._ptrs
"""

LOOKUP = """
    import torch
    from pkg.helpers import pointer_table

    class Scatter(torch.nn.Module):
        def __init__(self, pairs):
            super().__init__()
            self.pairs = pairs
            self._meta = {}

        def forward(self, x: torch.Tensor, n: int):
            key = tuple((dst.data_ptr(), src.data_ptr()) + tuple(dst.stride()) + tuple(dst.shape)
                        for dst, src in self.pairs)
            meta = self._meta.get(key)
            if meta is None:
                meta = pointer_table(list(key[0]), x.device)
                self._meta[key] = meta
            return x + meta
"""


def _syncs(run) -> list:
    return [item for item in where(run) if item[0] in ("pkg/model.py", "pkg/helpers.py")]


def test_a_buffer_registered_on_first_use_runs_once(tmp_path):
    # VALID: `not hasattr(self, "freqs")` then `self.register_buffer("freqs", ...)`: first call only
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": REGISTER})
    assert _syncs(run) == [], where(run)


def test_a_buffer_registered_under_another_name_stays_per_step(tmp_path):
    # INVALID twin: the block registers a field the test does not look for: every call builds
    source = REGISTER.replace('self.register_buffer("freqs", ', 'self.register_buffer("other", ')
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)


def test_a_table_rebuilt_when_its_own_buffers_move_runs_once(tmp_path):
    # VALID: the key is the data_ptr() of the module's own caches, stored back at the end
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": ADDRESSES})
    assert _syncs(run) == [], where(run)


def test_a_table_keyed_on_a_size_stays_per_step(tmp_path):
    # INVALID twin: a key holding a step's value (`n`) changes with the batch
    source = ADDRESSES.replace("pointers = tuple(c.data_ptr() for c in caches)",
                               "pointers = tuple(c.data_ptr() for c in caches) + (n,)")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)


def test_a_table_keyed_on_the_inputs_address_stays_per_step(tmp_path):
    # INVALID twin: the address of the step's input tensor, not of a buffer read from `self`
    source = ADDRESSES.replace("pointers = tuple(c.data_ptr() for c in caches)", "pointers = (x.data_ptr(),)")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)


def test_a_table_that_does_not_store_its_key_stays_per_step(tmp_path):
    # INVALID twin: the key is never stored back, so the test holds every call
    source = ADDRESSES.replace("            self._addresses = pointers\n", "")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)


def test_a_miss_of_a_memo_keyed_on_its_buffers_layout_runs_once(tmp_path):
    # VALID: `self._meta.get(key)` with a key of addresses, strides and shapes of `self.pairs`
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": LOOKUP})
    assert _syncs(run) == [], where(run)


def test_a_miss_of_a_memo_keyed_on_a_slice_shape_stays_per_step(tmp_path):
    # INVALID twin: the shape of `dst[:n]` changes with the step's `n`
    source = LOOKUP.replace("tuple(dst.shape)", "tuple(dst[:n].shape)")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert _syncs(run), where(run)
