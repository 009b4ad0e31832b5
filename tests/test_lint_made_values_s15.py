"""Host sizes that reach a resampler through a flattener, a field a method fills and a helper
nothing calls (session 15, made_values.py, uncalled.py). Each VALID package has an INVALID twin
that stays reported.

SGLang's MiniCPM-V: `tgt_sizes = torch.stack(flatten_nested_list([item.tgt_size for item in
items]))` joins a processor's CPU tensors (the carrier's host attribute, session 9), through a
list flattener imported from a package that re-exports its `common` module whole (`from .common
import *`); the model passes them to `self.resampler`, a field filled by `self.init_resampler()`,
whose override in each model builds the resampler; and a `get_vision_embedding(..., tgt_sizes)`
that nothing calls passes its own parameter on to the same tower.
"""

from __future__ import annotations

from test_lint_carrier_fields_s9 import BUILD, ITEMS, SCHEDULE
from test_lint_guards import lines
from test_lint_scope import lint_package

UTILS_INIT = """
from pkg.utils.common import *
"""

COMMON = """
def flatten_nested(nested):
    if isinstance(nested, list):
        return [item for sub in nested for item in flatten_nested(sub)]
    else:
        return [nested]
"""

MODEL = """
import torch
from typing import List
from pkg.items import Bundle
from pkg.utils import flatten_nested


def embed_routine(items, encode):
    return encode(items)


class Resampler(torch.nn.Module):
    def forward(self, x: torch.Tensor, sizes: torch.Tensor):
        n = sizes.max().item()
        return x[:n]


class Base(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.resampler = self.init_resampler()

    def init_resampler(self) -> torch.nn.Module:
        raise NotImplementedError

    def forward(self, items: List[Bundle]):
        return embed_routine(items, self.encode)

    def encode(self, items: List[Bundle]):
        sizes = torch.stack(flatten_nested([item.grid for item in items]), dim=0)
        x = torch.cat([item.payload for item in items])
        return self.resampler(x, SIZES)


class V2(Base):
    def init_resampler(self) -> torch.nn.Module:
        resampler = Resampler()
        return resampler.to(device="cuda")
EXTRA
"""

ITEM_LINE = 14  # `n = sizes.max().item()` in Resampler.forward

UNCALLED = """
    def embed(self, x, sizes=None):
        return self.resampler(x, sizes)
"""


def files(model=MODEL, sizes="sizes", extra="", common=COMMON, init=UTILS_INIT, **more):
    found = {"items.py": ITEMS, "build.py": BUILD, "schedule.py": SCHEDULE.replace("MOVE", "to(device, non_blocking=True)"),
             "utils/__init__.py": init, "utils/common.py": common,
             "model.py": model.replace("SIZES", sizes).replace("EXTRA", extra)}
    found.update(more)
    return found


def flagged(tmp_path, **changed):
    return lines(lint_package(tmp_path, files(**changed)), "pkg/model.py")


def cold(tmp_path, **changed):
    run = lint_package(tmp_path, files(**changed), include_cold=True)
    return {f.site.line: f.cold for f in run.findings if f.site.path == "pkg/model.py" and f.cold}


def test_host_sizes_through_a_flattener_and_a_method_filled_field(tmp_path):
    # VALID: the flattener gives its argument's items (host), the field holds V2's Resampler
    assert flagged(tmp_path) == []


def test_device_sizes_through_the_same_field_stay(tmp_path):
    # INVALID twin: the one call passes device data
    assert flagged(tmp_path, sizes="sizes.cuda()") == [ITEM_LINE]


def test_a_helper_that_makes_new_items_is_no_flattener(tmp_path):
    # INVALID twin: the helper returns new tensors, not its argument's items
    common = COMMON.replace("return [nested]", "return [nested.cuda()]")
    assert flagged(tmp_path, common=common) == [ITEM_LINE]


def test_the_flattener_without_the_star_export(tmp_path):
    # VALID too: imported from its own module
    model = MODEL.replace("from pkg.utils import flatten_nested", "from pkg.utils.common import flatten_nested")
    assert flagged(tmp_path, model=model, init="") == []


def test_a_star_export_of_another_function_says_nothing(tmp_path):
    # INVALID twin: the re-exported module has no such function; the call stays unknown
    init = "from pkg.utils.other import *\n"
    model = MODEL.replace("from pkg.utils import flatten_nested", "from pkg.utils import flatten_nested, gather")
    assert flagged(tmp_path, model=model, init=init, **{"utils/other.py": "def gather(x):\n    return x\n"}) == [ITEM_LINE]


def test_a_field_whose_method_builds_another_class(tmp_path):
    # INVALID twin: the override returns what a call of unknown class gives: no class, no callers
    model = MODEL.replace("resampler = Resampler()", "resampler = make_resampler()")
    assert flagged(tmp_path, model=model, extra="\ndef make_resampler():\n    return Resampler()\n") == [ITEM_LINE]


def test_a_method_nothing_calls_leaves_the_finding_cold(tmp_path):
    # VALID: `Base.embed` passes on a parameter, and nothing in the tree calls or names it
    model = MODEL.replace("    def encode(", UNCALLED.lstrip("\n") + "\n    def encode(")
    assert flagged(tmp_path, model=model) == []
    reasons = cold(tmp_path, model=model)
    assert "every call that runs by default passes host data for `sizes`" in reasons[ITEM_LINE]


def test_a_method_the_tree_calls_or_names_stays(tmp_path):
    # INVALID twins: a per-step root calls it with its own input; a dict of handlers names it
    model = MODEL.replace("    def encode(", UNCALLED.lstrip("\n") + "\n    def encode(")
    called = model + "\n\nclass Head(torch.nn.Module):\n    def forward(self, m: V2, x, sizes):\n        return m.embed(x, sizes)\n"
    assert flagged(tmp_path, model=called) == [ITEM_LINE]
    named = model.replace("self.resampler = self.init_resampler()",
                          "self.resampler = self.init_resampler()\n        self.handlers = {\"image\": self.embed}")
    assert flagged(tmp_path, model=named) == [ITEM_LINE]


def test_the_callers_own_sync_on_the_joined_items(tmp_path):
    # VALID: `torch.stack(flatten_nested(...))` joins the flattener's items, host data, in the
    # rules' walk too (the caller's own `.item()`); INVALID twin: a flattener of new device items
    model = MODEL.replace("        x = torch.cat(", "        k = sizes.max().item()\n        x = torch.cat(")
    (tmp_path / "valid").mkdir()
    (tmp_path / "invalid").mkdir()
    at = line_of(model, "k = sizes.max().item()")  # `encode` is no per-step code: with the cold ones
    assert at not in every_line(tmp_path / "valid", model=model)
    common = COMMON.replace("return [nested]", "return [nested.cuda()]")
    assert at in every_line(tmp_path / "invalid", model=model, common=common)


def every_line(tmp_path, **changed):
    return lines(lint_package(tmp_path, files(**changed), include_cold=True), "pkg/model.py")


def line_of(source: str, text: str) -> int:
    return next(n for n, row in enumerate(source.splitlines(), 1) if text in row)


POOL = """
import torch


class Cache:
    def store(self, loc: torch.Tensor):
        return None


class ShardedCache(Cache):
    def store(self, loc: torch.Tensor):
        return torch.nonzero(loc)


class Pool:
    def __init__(self):
        self.cache = self.make_cache()

    def make_cache(self) -> Cache:
        return Cache()

    def set_buffer(self, loc: torch.Tensor):
        self.cache.store(loc)


class ShardedPool(Pool):
    def make_cache(self) -> Cache:
        return ShardedCache()


class Runner:
    def __init__(self):
        self.pool = ShardedPool()

    def execute_model(self, loc: torch.Tensor):
        self.pool.set_buffer(loc)
"""


def test_a_method_called_on_a_method_filled_field_still_reaches_the_overrides(tmp_path):
    # INVALID (stays): `self.cache.store(...)` in the base pool runs the sharded cache's override,
    # whose `torch.nonzero` syncs; typing the field by the base's `make_cache` alone would drop it
    run = lint_package(tmp_path, {"pool.py": POOL})
    assert line_of(POOL, "return torch.nonzero(loc)") in lines(run, "pkg/pool.py")
