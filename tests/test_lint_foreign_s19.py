"""A function handed to another runtime (`[roots] foreign-exports`, foreign_exports.py): what it
passes on comes from that runtime, not from a serving step (uncalled.py). vLLM's vendored SM100
attention kernels register their planner for TVM FFI callers; the wrapper's `*args` made the
planner's lengths "unknown" though every call the tree makes passes host lengths."""

from __future__ import annotations

from test_lint_scope import lint_package, where

PLANNER = """
    import torch

    def plan(qo_segment_lens: torch.Tensor, kv_segment_lens: torch.Tensor, *args, **kwargs):
        qo_lens = qo_segment_lens.tolist()
        kv_lens = kv_segment_lens.tolist()
        return qo_lens, kv_lens
"""

BUILDER = """
    import torch
    from pkg.planner import plan

    class MetadataBuilder:
        def build(self, common, seq_lens: torch.Tensor, num_reqs: int):
            qo_lens_cpu = common.query_start_loc_cpu[1:] - common.query_start_loc_cpu[:-1]
            kv_lens_cpu = seq_lens[:num_reqs].cpu()
            return plan(qo_lens_cpu, kv_lens_cpu, 4, page_size=16)
"""

# the registration, as vLLM's fmha_sm100/__init__.py writes it (under a `try:`, its import too)
EXPORTS = """
    try:
        import tvm_ffi
        from pkg.planner import plan as _plan_api

        def _to_torch(x):
            return x

        def _plan_ffi(*args):
            args = [_to_torch(a) for a in args]
            return _plan_api(*args)

        REGISTER
    except ImportError:
        pass
"""

PLANNER_LINES = [("pkg/planner.py", 5, "SYN202"), ("pkg/planner.py", 6, "SYN202")]
BUILD_COPY = ("pkg/builder.py", 8, "SYN203")  # `seq_lens[:num_reqs].cpu()`: the real sync


def _run(tmp_path, register: str, extra: dict | None = None, **overrides):
    files = {"planner.py": PLANNER, "builder.py": BUILDER, "exports.py": EXPORTS.replace("REGISTER", register)}
    return lint_package(tmp_path, {**files, **(extra or {})}, **overrides)


def test_a_function_only_another_runtime_calls_does_not_feed_the_planner(tmp_path):
    # VALID: the builder, the one caller a serving step runs, passes host lengths
    for register in ('tvm_ffi.register_global_func("ops.plan", _plan_ffi)',
                     'tvm_ffi.register_global_func(name="ops.plan", f=_plan_ffi)'):
        run = _run(tmp_path, register)
        assert where(run) == [BUILD_COPY], register


def test_the_planner_lines_stay_cold_with_the_reason(tmp_path):
    run = _run(tmp_path, 'tvm_ffi.register_global_func("ops.plan", _plan_ffi)', include_cold=True)
    cold = {(f.site.path, f.site.line, f.code): f.cold for f in run.findings if f.cold}
    for key in PLANNER_LINES:
        assert "functions nothing in the tree calls" in cold[key], cold


def test_a_function_handed_to_an_in_tree_registry_may_be_called_by_a_step(tmp_path):
    # INVALID: a registry of the tree's own may call what it holds in every step
    run = _run(tmp_path, 'registry.register("ops.plan", _plan_ffi)')
    assert set(PLANNER_LINES) <= set(where(run))


def test_an_exported_function_a_step_also_calls_still_feeds_the_planner(tmp_path):
    # INVALID: the tree calls the export itself, from a per-step root, with data of its own
    model = """
        import torch
        from pkg.exports import _plan_ffi

        class Model(torch.nn.Module):
            def forward(self, lens: torch.Tensor):
                return _plan_ffi(lens, lens)
    """
    run = _run(tmp_path, 'tvm_ffi.register_global_func("ops.plan", _plan_ffi)', extra={"model.py": model})
    assert set(PLANNER_LINES) <= set(where(run))
