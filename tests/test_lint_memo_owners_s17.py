"""A memo on a plain object the tree builds only in code that runs once, session 17 (branch
`s-diffmemo`, syncscope/lint/memo_owners.py).

`if end is None or loc is None: end = int(self.end.item()); ...; self.end_int = end` fills host
mirrors once per object (memo.py). memo.py made that cold only in a class that serves steps (a
module, a builder). A plain dataclass (SGLang diffusion's `CausalSelfAttentionKVCache`) lives
across steps too when every place the tree builds one runs once: a function named like once-only
code (`_allocate_kv_cache`: `skip-functions`), a module-level statement, or the constructor of
an object that lives so. VALID: built by an allocator, in a module's `__init__`, at import.
INVALID twins: built inside the step (`forward`), built both by the allocator and per step, by a
`cls(...)` classmethod not named so, in the constructor of an object built per step, never built
in the tree.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

CACHE = """
from dataclasses import dataclass
import torch


@dataclass
class KVCache:
    k: torch.Tensor
    end_index: torch.Tensor
    local_index: torch.Tensor
    end_int: int | None = None
    local_int: int | None = None

    def _read(self) -> tuple[int, int]:
        end = self.end_int
        loc = self.local_int
        if end is None or loc is None:
            end = int(self.end_index.item())
            loc = int(self.local_index.item())
            self.end_int = end
            self.local_int = loc
        return end, loc

    def update(self, k):
        end, loc = self._read()
        self.k[:, loc:loc + k.shape[1]] = k
        return self.k
{extra}"""

FRESH = """
    @classmethod
    def fresh(cls, device):
        return cls(k=torch.zeros(1, 8, device=device), end_index=torch.zeros(1, device=device),
                   local_index=torch.zeros(1, device=device))
"""

MAKE = ("KVCache(k=torch.zeros(1, 8, device={d}), end_index=torch.zeros(1, dtype=torch.long, device={d}), "
        "local_index=torch.zeros(1, dtype=torch.long, device={d}))")

ATTN = """
import torch
from torch import nn
from pkg.cache import KVCache


class Attn(nn.Module):
    def forward(self, x, kv_cache: KVCache):
        return kv_cache.update(x)
"""

STAGE = """
import torch
from pkg.attn import Attn
from pkg.cache import KVCache


class Stage:
    def __init__(self):
        self.attn = Attn()

    def _allocate_kv_cache(self, device):
        return [{alloc} for _ in range(4)]

    def forward(self, batch, x):
        caches = self._allocate_kv_cache(x.device)
        for t in batch.timesteps:
            {inner}
            for c in caches:
                x = self.attn(x, c)
        return x
"""

SYNC_LINES = [("pkg/cache.py", 18, "SYN201"), ("pkg/cache.py", 19, "SYN201")]


def _run(tmp_path, alloc=MAKE.format(d="device"), inner="pass", extra="", files=None, **overrides):
    package = {"cache.py": CACHE.format(extra=extra), "attn.py": ATTN,
               "stage.py": STAGE.format(alloc=alloc, inner=inner)}
    package.update(files or {})
    return lint_package(tmp_path, package, **overrides)


def _synced(run) -> list:
    return [item for item in where(run) if item[0] == "pkg/cache.py" and item[1] in (18, 19)]


# -- VALID: every object is built in code that runs once ----------------------------------

def test_cache_built_by_an_allocator_fills_its_mirrors_once(tmp_path):
    assert where(_run(tmp_path)) == []
    run = _run(tmp_path, include_cold=True)
    cold = [f for f in run.findings if (f.site.path, f.site.line) in {(p, n) for p, n, _ in SYNC_LINES}]
    assert sorted((f.site.path, f.site.line, f.code) for f in cold) == SYNC_LINES
    assert all("`KVCache` is built only in code that runs once (`_allocate_kv_cache`)" in f.cold for f in cold)


def test_cache_built_in_a_modules_constructor(tmp_path):
    model = """
import torch
from torch import nn
from pkg.cache import KVCache


class Model(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.cache = {make}

    def forward(self, x):
        return self.cache.update(x)
""".format(make=MAKE.format(d="device"))
    run = _run(tmp_path, files={"model.py": model})
    assert _synced(run) == []
    assert _synced(_run(tmp_path, files={"model.py": model}, include_cold=True)) == SYNC_LINES


def test_cache_built_at_import(tmp_path):
    model = """
import torch
from torch import nn
from pkg.cache import KVCache

CACHE = {make}


class Model(nn.Module):
    def forward(self, x):
        return CACHE.update(x)
""".format(make=MAKE.format(d='"cuda"'))
    assert _synced(_run(tmp_path, files={"model.py": model})) == []


# -- INVALID twins: some object may be built every step -----------------------------------

def test_cache_built_inside_the_step_stays(tmp_path):
    inner = f"caches = [{MAKE.format(d='x.device')}]"
    assert _synced(_run(tmp_path, inner=inner)) == SYNC_LINES


def test_cache_built_per_step_anywhere_else_stays(tmp_path):
    helper = """
import torch
from pkg.cache import KVCache


def fresh_cache(x):
    return {make}
""".format(make=MAKE.format(d="x.device"))
    assert _synced(_run(tmp_path, files={"helper.py": helper})) == SYNC_LINES


def test_cache_from_a_classmethod_not_named_once_stays(tmp_path):
    # `cls(...)` in `fresh` builds one wherever `fresh` is called: the step calls it
    inner = "caches = [KVCache.fresh(x.device)]"
    assert _synced(_run(tmp_path, inner=inner, extra=FRESH)) == SYNC_LINES


def test_cache_built_by_the_constructor_of_a_per_step_object_stays(tmp_path):
    batch = """
import torch
from pkg.cache import KVCache


class StepState:
    def __init__(self, device):
        self.cache = {make}
""".format(make=MAKE.format(d="device"))
    inner = "caches = [StepState(x.device).cache]"
    files = {"batch.py": batch, "stage.py": STAGE.format(alloc=MAKE.format(d="device"), inner=inner)
             .replace("from pkg.cache import KVCache", "from pkg.cache import KVCache\nfrom pkg.batch import StepState")}
    assert _synced(_run(tmp_path, files=files)) == SYNC_LINES


def test_cache_the_tree_never_builds_stays(tmp_path):
    stage = """
from pkg.attn import Attn


class Stage:
    def __init__(self):
        self.attn = Attn()

    def forward(self, batch, x):
        for t in batch.timesteps:
            for c in batch.caches:
                x = self.attn(x, c)
        return x
"""
    assert _synced(_run(tmp_path, files={"stage.py": stage})) == SYNC_LINES


def test_cache_of_a_class_imported_inside_a_per_step_helper_stays(tmp_path):
    # the import inside the function leaves the name unresolved: counted by the class's name
    helper = """
import torch


def fresh_cache(x):
    from pkg.cache import KVCache
    return {make}
""".format(make=MAKE.format(d="x.device"))
    assert _synced(_run(tmp_path, files={"helper.py": helper})) == SYNC_LINES
