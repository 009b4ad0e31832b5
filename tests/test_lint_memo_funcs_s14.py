"""Work that runs on a cache miss only (session 14, branch `s-memo`).

1. A memoized function (`@lru_cache`) whose every parameter is declared a Python value runs its
   body once per key: the blocking upload in a helper it calls does not sync for its per-step
   callers (memo_funcs.py). A memo keyed by a tensor, by an undeclared parameter, or by `id()`
   of one still does.
2. `if self.step_index is None:` whose body stores `self._step_index` fills the field the
   property `step_index` reads: once per object of a class that serves steps (memo.py TWIN).
Small packages: the syncing helper in one file, its callers in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where

HELPERS = """
    import torch

    def build_meta(lens, device):
        return {"cu": torch.as_tensor(list(lens), dtype=torch.int32, device=device)}
"""

MODEL = """
    import functools
    import torch
    from pkg.helpers import build_meta

    Segment = int | tuple[int, int]

    @functools.lru_cache(maxsize=8)
    def varlen_meta(lens: tuple[int, ...], segment: Segment, device: torch.device) -> dict:
        \"\"\"Built once per key.\"\"\"
        return build_meta(lens, device)

    class DiT(torch.nn.Module):
        def forward(self, x: torch.Tensor, lens: list):
            meta = varlen_meta(tuple(lens), 3, x.device)
            return x * 2, meta
"""


def test_a_memo_of_python_values_does_not_sync_for_its_callers(tmp_path):
    # VALID: the upload runs on a miss of the lru_cache only
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": MODEL})
    assert where(run) == [], where(run)


def test_the_memo_call_is_not_reported_cold_either(tmp_path):
    # the edges out of a memo of configuration values are gone (as its own syncs were before)
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": MODEL}, include_cold=True)
    assert ("pkg/model.py", 15, "SYN602") not in where(run), where(run)


def test_a_memo_keyed_by_a_tensor_still_syncs_for_its_callers(tmp_path):
    # INVALID twin: a tensor in the key is hashed by identity, a new one every step
    source = MODEL.replace("lens: tuple[int, ...]", "lens: torch.Tensor").replace("tuple(lens)", "x")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert ("pkg/model.py", 15, "SYN602") in where(run), where(run)


def test_a_memo_with_an_undeclared_parameter_still_syncs_for_its_callers(tmp_path):
    # INVALID twin: `lens` may be anything its callers hand it
    source = MODEL.replace("lens: tuple[int, ...]", "lens")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert ("pkg/model.py", 15, "SYN602") in where(run), where(run)


def test_a_memo_keyed_by_identity_still_syncs_for_its_callers(tmp_path):
    # INVALID twin: `id(...)` of a parameter in the key misses for every new object
    source = MODEL.replace("return build_meta(lens, device)", "key = id(lens)\n        return build_meta(lens, device)")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert ("pkg/model.py", 16, "SYN602") in where(run), where(run)


def test_an_unmemoized_twin_still_syncs(tmp_path):
    # INVALID twin: without the decorator the upload runs every step
    source = MODEL.replace("    @functools.lru_cache(maxsize=8)\n", "")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert any(path == "pkg/model.py" and code == "SYN602" for path, _, code in where(run)), where(run)


SCHEDULER_BASE = """
    import torch

    class BaseScheduler:
        def __init__(self, timesteps: torch.Tensor):
            self.timesteps = timesteps
            self._step_index = None

        @property
        def step_index(self):
            return self._step_index
"""

SCHEDULER = """
    import torch
    from pkg.base import BaseScheduler

    class Scheduler(BaseScheduler):
        def _index_for(self, timestep: torch.Tensor) -> int:
            if self.step_index is None:
                found = torch.nonzero(self.timesteps == timestep).flatten()
                self._step_index = int(found[0].item())
            return self._step_index

        def step(self, out: torch.Tensor, timestep: torch.Tensor, sample: torch.Tensor):
            index = self._index_for(timestep)
            self._step_index += 1
            return sample + out * index
"""


def test_a_lazy_index_behind_a_property_runs_once_per_object(tmp_path):
    # VALID: the property `step_index` reads `self._step_index`, which the block fills
    run = lint_package(tmp_path, {"base.py": SCHEDULER_BASE, "sched.py": SCHEDULER})
    assert where(run) == [], where(run)


def test_a_lazy_index_with_no_such_property_stays(tmp_path):
    # INVALID twin: `step_index` is a plain field, the block fills another one
    base = SCHEDULER_BASE.replace("@property\n        def step_index(self):\n            return self._step_index",
                                  "def reset(self):\n            self.step_index = None")
    run = lint_package(tmp_path, {"base.py": base, "sched.py": SCHEDULER})
    assert ("pkg/sched.py", 8, "SYN105") in where(run), where(run)


MODULE_DICT = """
    import torch
    from pkg.helpers import build_meta

    _META_CACHE = {}

    def varlen_meta(lens, device):
        key = (tuple(lens), device)
        cached = _META_CACHE.get(key)
        if cached is not None:
            return cached
        meta = build_meta(lens, device)
        _META_CACHE[key] = meta
        return meta

    class DiT(torch.nn.Module):
        def forward(self, x: torch.Tensor, lens: list):
            return x * 2, varlen_meta(lens, x.device)
"""


def test_a_module_dict_whose_hit_returns_early_fills_once_per_key(tmp_path):
    # VALID: the rest after `if cached is not None: return cached` fills the module's dict
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": MODULE_DICT})
    assert where(run) == [], where(run)


def test_a_module_dict_keyed_by_identity_still_syncs(tmp_path):
    # INVALID twin: `id(lens)` is new with every new object
    source = MODULE_DICT.replace("key = (tuple(lens), device)", "key = (id(lens), device)")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert ("pkg/model.py", 18, "SYN602") in where(run), where(run)


def test_an_early_return_with_no_store_still_syncs(tmp_path):
    # INVALID twin: the rest never fills the dict, so every call misses
    source = MODULE_DICT.replace("        _META_CACHE[key] = meta\n", "")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert ("pkg/model.py", 17, "SYN602") in where(run), where(run)


def test_a_local_dict_whose_hit_returns_early_still_syncs(tmp_path):
    # INVALID twin: a dict the function binds itself is new on every call
    source = MODULE_DICT.replace("        key = (tuple(lens), device)\n",
                                 "        _META_CACHE = {}\n        key = (tuple(lens), device)\n")
    run = lint_package(tmp_path, {"helpers.py": HELPERS, "model.py": source})
    assert ("pkg/model.py", 19, "SYN602") in where(run), where(run)
