"""A plan cache held by a metadata builder fills an entry once per new key (memo.py with
memo_keys.dict_entry), and a construction that stands in for a parameter every caller passes is
no place the cache is built (exprguards.or_fallback, memo_owners.py). vLLM 0.33.0's MiniMax-M3
sparse decode: `MSACutlassDecodePlanCache.prepare` looks its plan up with
`self.plans.get(key)` (key: batch size, query length, strides) and builds it, with a blocking
copy of a host list, only on a miss; the builder makes the cache in `__init__` and hands it to
`prepare_decode_metadata(..., plan_cache=self.plan_cache)`, whose `plan_cache or
PlanCache()` builds one only for a caller that gives none (and the same written as `if
plan_cache is None: plan_cache = PlanCache()`). Small package: the cache and the
helper in one module, the builder in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where

PLANS = """
    import torch

    class PlanCache:
        def __init__(self):
            self.plans = {}

        def _build_plan(self, batch: int, device):
            return torch.tensor([batch * 64], device=device)

        def prepare(self, seq_lens: torch.Tensor, batch: int):
            key = (batch, seq_lens.shape[0])
            plan = self.plans.get(key)
            if plan is None:
                plan = self._build_plan(batch, seq_lens.device)
                self.plans[key] = plan
            return plan

    def prepare_decode_metadata(seq_lens: torch.Tensor, batch: int, *, plan_cache: PlanCache | None = None):
        cache = plan_cache or PlanCache()
        return cache.prepare(seq_lens, batch)
"""

BUILDER = """
    import torch
    from pkg.plans import PlanCache, prepare_decode_metadata

    class SparseBuilder:
        def __init__(self):
            self.plan_cache = PlanCache()

        def build(self, seq_lens: torch.Tensor, batch: int):
            return prepare_decode_metadata(seq_lens, batch, plan_cache=self.plan_cache)
"""

SYNC = ("pkg/plans.py", 9, "SYN401")  # the plan's blocking copy of a host list


def _lint(tmp_path, plans=PLANS, builder=BUILDER):
    return where(lint_package(tmp_path, {"plans.py": plans, "builder.py": builder}))


def test_a_plan_built_on_a_miss_of_a_long_lived_cache_is_no_step_sync(tmp_path):
    # VALID: the per-step `build` reaches the plan only through the cache's miss
    found = _lint(tmp_path)
    assert SYNC not in found, found
    assert not [f for f in found if f[2].startswith("SYN60")], found
    # VALID: the same fill written with an early return of the hit
    early = PLANS.replace("plan = self.plans.get(key)\n            if plan is None:\n"
                          "                plan = self._build_plan(batch, seq_lens.device)\n"
                          "                self.plans[key] = plan\n            return plan",
                          "plan = self.plans.get(key)\n            if plan is not None:\n                return plan\n"
                          "            plan = self._build_plan(batch, seq_lens.device)\n"
                          "            self.plans[key] = plan\n            return plan")
    assert early != PLANS
    assert SYNC not in _lint(tmp_path, plans=early)
    # VALID: the helper's fallback written as a block
    block = PLANS.replace("cache = plan_cache or PlanCache()\n        return cache.prepare",
                          "if plan_cache is None:\n            plan_cache = PlanCache()\n        return plan_cache.prepare")
    assert block != PLANS
    assert SYNC not in _lint(tmp_path, plans=block)


def test_a_cache_anyone_may_build_per_step_or_keyed_by_identity_keeps_the_sync(tmp_path):
    # INVALID twins, each keeps the plan's copy a per-step sync:
    # a caller that gives no cache (the helper builds a fresh one every step)
    leaves_out = BUILDER.replace("prepare_decode_metadata(seq_lens, batch, plan_cache=self.plan_cache)",
                                 "prepare_decode_metadata(seq_lens, batch)")
    # a caller that passes None for it
    passes_none = BUILDER.replace("plan_cache=self.plan_cache)", "plan_cache=None)")
    # a parameter whose value may be false while not None (a dict of plans: an empty one is false)
    a_dict = PLANS.replace("plan_cache: PlanCache | None = None", "plan_cache: dict | None = None")
    # a key read from a tensor's identity: a new key with each new tensor
    by_identity = PLANS.replace("key = (batch, seq_lens.shape[0])", "key = seq_lens.data_ptr()")
    # a rebuild forced by something else than a miss
    forced = PLANS.replace("if plan is None:", "if plan is None or batch > 8:")
    # the fallback tested on a local copy (no parameter's None-test: not read)
    local_test = PLANS.replace("cache = plan_cache or PlanCache()",
                               "cache = plan_cache\n        if cache is None:\n            cache = PlanCache()")
    for plans, builder in ((PLANS, leaves_out), (PLANS, passes_none), (a_dict, BUILDER), (by_identity, BUILDER),
                           (forced, BUILDER), (local_test, BUILDER)):
        assert (plans, builder) != (PLANS, BUILDER)
        found = _lint(tmp_path, plans=plans, builder=builder)
        assert SYNC in found, (plans, builder, found)
