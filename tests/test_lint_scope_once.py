"""Issue 24, work reached from a per-step root that does not run every step: memos a long-lived
object fills once (syncscope/lint/memo.py), CUDA-graph capture, and check switches the engines
leave off (syncscope/lint/branches.py). Each VALID package is not reported by default (it is
cold with `include_cold`); each INVALID one stays per-step."""

from __future__ import annotations

import textwrap

from test_lint_scope import lint_package, where


def cold_reasons(run) -> dict[tuple[str, int], str]:
    return {(f.site.path, f.site.line): f.cold for f in run.findings if f.cold}


# -- memos ----------------------------------------------------------------------------------
BUILDER = """
    import torch
    from pkg.ctx import Context

    class Builder:
        def __init__(self):
            self.context = None

        def build(self, x: torch.Tensor):
            return self._get_context(x)

        def _get_context(self, x):
            context = self.context
            if context is not None:
                return context
            context = Context.create(x)
            self.context = context
            return context
"""
CTX = """
    import torch

    class Context:
        @classmethod
        def create(cls, x: torch.Tensor):
            n = int(x.max())
            return cls()
"""


def test_a_context_a_builder_caches_is_built_once(tmp_path):
    run = lint_package(tmp_path, {"builder.py": BUILDER, "ctx.py": CTX})
    assert where(run) == []
    cold = lint_package(tmp_path, {"builder.py": BUILDER, "ctx.py": CTX}, include_cold=True)
    # the sync is where the context is built, which only the memo's fill calls
    assert cold_reasons(cold) == {("pkg/ctx.py", 7): "not reached from a per-step root"}


def test_a_cache_keyed_by_size_is_rebuilt_every_step(tmp_path):
    # `cached[0] == bs`: rebuilt whenever the batch size changes, so it stays per-step
    source = BUILDER.replace("if context is not None:", "if context is not None and context[0] == x.shape[0]:")
    run = lint_package(tmp_path, {"builder.py": source, "ctx.py": CTX})
    assert ("pkg/ctx.py", 7) in [(path, line) for path, line, _ in where(run)], where(run)


def test_a_per_step_object_that_fills_a_field_lazily_still_syncs(tmp_path):
    # the object has no per-step method of its own: it may be built every step (a metadata
    # object), so its lazy field is a sync for whoever reads it
    source = BUILDER.replace("class Builder:", "class Metadata:").replace("def build(", "def summary(")
    model = """
        import torch
        from pkg.builder import Metadata

        class Model(torch.nn.Module):
            def forward(self, x: torch.Tensor, meta: Metadata):
                return meta.summary(x)
    """
    run = lint_package(tmp_path, {"builder.py": source, "ctx.py": CTX, "model.py": model})
    assert where(run)


HASATTR = """
    import torch

    class Attention(torch.nn.Module):
        def forward(self, x: torch.Tensor, layers):
            return x + self._ptrs(layers)

        def _ptrs(self, layers):
            if not hasattr(self, "_cache_ptrs"):
                self._cache_ptrs = torch.tensor([l.data_ptr() for l in layers], device="cuda")
            return self._cache_ptrs

        def _step_ptrs(self, layers):
            return torch.tensor([l.data_ptr() for l in layers], device="cuda")
"""


def test_hasattr_memo_and_a_method_named_for_the_field(tmp_path):
    scheduler = """
        import torch

        class Scheduler:
            def step(self, sigma: torch.Tensor):
                if self.step_index is None:
                    self._init_step_index(sigma)
                return sigma

            def _init_step_index(self, sigma):
                self._step_index = int((sigma == 0).nonzero()[0])
    """
    files = {"attn.py": HASATTR, "sched.py": scheduler}
    run = lint_package(tmp_path, files)
    # the memo is cold; a method that builds the same tensor every call is not
    assert [line for _, line, _ in where(run)] == [], where(run)
    step = HASATTR.replace("return x + self._ptrs(layers)", "return x + self._step_ptrs(layers)")
    run = lint_package(tmp_path, {"attn.py": step, "sched.py": scheduler})
    assert where(run) and all(path.endswith("attn.py") for path, _, _ in where(run)), where(run)


# -- capture and check switches ---------------------------------------------------------------
SWITCHES = """
    import os
    import torch
    from pkg import envs

    class Backend(torch.nn.Module):
        def forward(self, x: torch.Tensor, in_capture: bool):
            if in_capture:
                n = x.cpu()
            if envs.VLLM_COMPUTE_NANS_IN_LOGITS:
                m = int(x.isnan().sum())
            if os.environ.get("SGLANG_X_BOUNDS") == "1":
                k = bool(x.any().item())
            if self.capture_aux_hidden_states:
                h = x.tolist()
            if not envs.VLLM_SKIP_P2P_CHECK:
                p = x.tolist()
            return x
"""


def test_capture_and_check_switches_are_cold_but_feature_flags_are_not(tmp_path):
    run = lint_package(tmp_path, {"backend.py": SWITCHES, "envs.py": "VLLM_COMPUTE_NANS_IN_LOGITS = False\n"})
    lines = sorted(line for _, line, _ in where(run))
    source = textwrap.dedent(SWITCHES).splitlines()
    kept = [source[line - 1].strip() for line in lines]
    assert kept == ["h = x.tolist()", "p = x.tolist()"], kept


def test_a_mixin_memo_is_once_when_every_subclass_serves_steps(tmp_path):
    mixin = """
        import torch

        class DraftMixin:
            def _bundle(self, pool):
                cached = self._bundle_cache
                if cached is not None and cached[0] == id(pool):
                    return cached[1]
                bundle = torch.tensor(pool.ptrs, device="cuda")
                self._bundle_cache = (id(pool), bundle)
                return bundle
    """
    model = """
        import torch
        from pkg.mixin import DraftMixin

        class Draft(DraftMixin, torch.nn.Module):
            def forward(self, x: torch.Tensor, pool):
                return x + self._bundle(pool)
    """
    run = lint_package(tmp_path, {"mixin.py": mixin, "model.py": model})
    assert where(run) == []
    # another subclass that may be built every step: the fill may run every step
    other = model + """
        class PerStep(DraftMixin):
            def summary(self, pool):
                return self._bundle(pool)

        class Model2(torch.nn.Module):
            def forward(self, x: torch.Tensor, meta: PerStep, pool):
                return meta.summary(pool)
    """
    run = lint_package(tmp_path, {"mixin.py": mixin, "model.py": other})
    assert ("pkg/mixin.py", 9) in [(path, line) for path, line, _ in where(run)], where(run)


def test_a_per_step_object_with_a_forward_named_helper_is_no_server(tmp_path):
    # a dataclass built every step whose helper happens to be named like a module method
    batch = """
        import torch

        class Batch:
            def _forward_num_tokens(self):
                return 0

            def chunk_len(self, lens: torch.Tensor):
                if self.prefix_chunk_len is None:
                    self.prefix_chunk_len = int(lens.max())
                return self.prefix_chunk_len
    """
    model = """
        import torch
        from pkg.batch import Batch

        class Model(torch.nn.Module):
            def forward(self, x: torch.Tensor, batch: Batch):
                return batch.chunk_len(x)
    """
    run = lint_package(tmp_path, {"batch.py": batch, "model.py": model})
    assert where(run), "the lazy field of a per-step object is a sync for its per-step caller"


def test_a_fill_through_a_per_step_method_keeps_the_root_sync(tmp_path):
    # the root's own sync stays; the lazy call of the root is cold since session 17
    # (root_fills.py, tests/test_lint_root_fills_s17.py), its twin there keeps it
    backend = """
        import torch

        class Backend(torch.nn.Module):
            def init_forward_metadata(self, x: torch.Tensor):
                self.forward_metadata = int(x.max())

            def forward(self, x: torch.Tensor):
                if self.forward_metadata is None:
                    self.init_forward_metadata(x)
                return x
    """
    run = lint_package(tmp_path, {"backend.py": backend})
    assert ("pkg/backend.py", 6) in [(path, line) for path, line, _ in where(run)], where(run)
    assert ("pkg/backend.py", 10) not in [(path, line) for path, line, _ in where(run)], where(run)


# -- a module's cache filled on a miss (branches.py `cache_fill`) ------------------------------
GEOMETRY = """
    import torch
    from pkg.tables import build_table

    _GEOMETRY = {}

    def geometry(offsets: tuple, device):
        key = (offsets, device)
        table = _GEOMETRY.get(key)
        if table is None:
            table = build_table(offsets, device)
            _GEOMETRY[key] = table
        return table

    class Layer(torch.nn.Module):
        def forward(self, x: torch.Tensor, offsets: tuple):
            return x + geometry(offsets, x.device)
"""
TABLES = """
    import torch

    def build_table(offsets, device):
        return torch.tensor(list(offsets), dtype=torch.int32, device=device)
"""


def test_a_module_cache_filled_on_a_miss_runs_once_per_key(tmp_path):
    files = {"layer.py": GEOMETRY, "tables.py": TABLES}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert cold[("pkg/layer.py", 11)] == "fills the module's cache `_GEOMETRY`: runs once per key", cold


def test_the_not_in_form_of_a_module_cache_runs_once_per_key(tmp_path):
    source = GEOMETRY.replace(
        "table = _GEOMETRY.get(key)\n        if table is None:\n            table = build_table(offsets, device)\n"
        "            _GEOMETRY[key] = table\n        return table",
        "if key not in _GEOMETRY:\n            _GEOMETRY[key] = build_table(offsets, device)\n        return _GEOMETRY[key]")
    assert "not in _GEOMETRY" in source
    assert where(lint_package(tmp_path, {"layer.py": source, "tables.py": TABLES})) == []


def test_a_cache_keyed_by_a_tensors_identity_stays_per_step(tmp_path):
    # a new tensor every step is a new key: the fill runs every step
    source = GEOMETRY.replace("key = (offsets, device)", "key = id(offsets)")
    run = lint_package(tmp_path, {"layer.py": source, "tables.py": TABLES})
    assert ("pkg/tables.py", 5) in [(path, line) for path, line, _ in where(run)], where(run)


def test_a_fill_that_does_not_store_in_the_dict_stays_per_step(tmp_path):
    # `table is None` after `.get`, but the body keeps nothing: every miss builds again
    source = GEOMETRY.replace("            _GEOMETRY[key] = table\n", "")
    run = lint_package(tmp_path, {"layer.py": source, "tables.py": TABLES})
    assert ("pkg/tables.py", 5) in [(path, line) for path, line, _ in where(run)], where(run)


def test_a_local_dict_is_no_module_cache(tmp_path):
    # a dict made in the function lives for one call: no cache across steps
    source = GEOMETRY.replace("    def geometry(offsets: tuple, device):\n",
                              "    def geometry(offsets: tuple, device):\n        _GEOMETRY = {}\n")
    source = source.replace("    _GEOMETRY = {}\n\n    def geometry", "    def geometry")
    run = lint_package(tmp_path, {"layer.py": source, "tables.py": TABLES})
    assert ("pkg/tables.py", 5) in [(path, line) for path, line, _ in where(run)], where(run)
