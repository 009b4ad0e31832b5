"""bench/paired_stats.py: the median paired ratio and its bootstrap 95% interval, which
bench/runtime_overhead.py reports (the GPU figure itself is in docs/gpu-results.md)."""

import importlib.util
import random
import sys
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("paired_stats", Path(__file__).resolve().parent.parent / "bench" / "paired_stats.py")
paired_stats = importlib.util.module_from_spec(_SPEC)
sys.modules["paired_stats"] = paired_stats  # dataclasses look their module up while the class is built
_SPEC.loader.exec_module(paired_stats)


def test_median_is_the_median_of_the_per_round_ratios_not_of_each_arm():
    # Rounds drift by 2x, the candidate is always 1% slower within its round: pairing sees 1%.
    baseline = [1.0, 2.0, 1.0, 2.0, 1.0]
    candidate = [b * 1.01 for b in baseline]
    est = paired_stats.median_ratio_interval(baseline, candidate, resamples=200)
    assert est.median == pytest.approx(1.01)
    assert est.low == pytest.approx(1.01) and est.high == pytest.approx(1.01)  # no spread in the ratios


def test_interval_contains_the_median_is_seeded_and_narrows_with_more_rounds():
    rng = random.Random(1)
    baseline = [rng.uniform(0.8, 1.2) for _ in range(160)]
    candidate = [b * rng.gauss(1.004, 0.02) for b in baseline]
    few = paired_stats.median_ratio_interval(baseline[:20], candidate[:20])
    many = paired_stats.median_ratio_interval(baseline, candidate)
    assert few.low <= few.median <= few.high and many.low <= many.median <= many.high
    assert many.width < few.width
    assert paired_stats.median_ratio_interval(baseline, candidate) == many  # same rounds, same interval


def test_interval_covers_the_true_median_about_95_percent_of_the_time():
    rng = random.Random(7)
    true_median, covered, trials = 1.004, 0, 150
    for trial in range(trials):
        baseline = [rng.uniform(5.0, 7.0) for _ in range(41)]
        candidate = [b * (true_median + rng.gauss(0, 0.01)) for b in baseline]
        est = paired_stats.median_ratio_interval(baseline, candidate, resamples=400, seed=trial)
        covered += est.low <= true_median <= est.high
    assert 0.85 <= covered / trials <= 1.0


def test_unpaired_input_is_refused():
    with pytest.raises(ValueError):
        paired_stats.median_ratio_interval([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        paired_stats.median_ratio_interval([], [])


def test_describe_states_the_interval():
    est = paired_stats.RatioEstimate(1.0039, 0.9990, 1.0081, 61)
    assert est.describe() == "+0.39% (95% CI -0.10% to +0.81%, 61 rounds)"
    assert est.to_json()["ci95_width"] == pytest.approx(0.0091)


def test_the_runtime_benchs_equalizing_touch_leaves_torch_as_it_was():
    # bench/runtime_overhead.py --equalize: the plain arms make an install's class and module
    # changes and must leave nothing of them behind (an attribute left on torch.Tensor would be
    # measured as plain python).
    torch = pytest.importorskip("torch")
    bench = Path(__file__).resolve().parent.parent / "bench"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location("runtime_overhead", bench / "runtime_overhead.py")
        runtime_overhead = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(runtime_overhead)
    finally:
        sys.path.remove(str(bench))
    from syncscope.runtime import cuda

    owners = {id(s.owner): s.owner for s in cuda._shim_specs()}.values()
    before = [dict(vars(owner)) for owner in owners]
    runtime_overhead.touch_like_an_install()
    after = [dict(vars(owner)) for owner in owners]
    assert [sorted(b) for b in before] == [sorted(a) for a in after]
    assert all(b[k] is a[k] for b, a in zip(before, after) for k in b)


def _load_bench(name):
    bench = Path(__file__).resolve().parent.parent / "bench"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location(name, bench / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(bench))
    return module


def test_the_warm_shim_benchs_groups_split_the_quiet_detectors_attributes_and_leave_torch_as_it_was():
    # bench/warm_shim_cost.py bisects what the installed quiet detector costs a warm step: each
    # arm must wrap exactly its group (made by the quiet detector itself), run the step through
    # its shims, and leave nothing behind for the next arm.
    torch = pytest.importorskip("torch")
    warm = _load_bench("warm_shim_cost")
    from syncscope.runtime import cuda, quiet_cuda

    groups = warm.groups()
    quiet = {s.api for s in groups["quiet"]}
    assert quiet == {s.api for s in cuda._shim_specs()} - quiet_cuda.UNWRAPPED
    assert {s.api for s in groups["tensor_called"]} == {"Tensor.to"}
    assert {s.api for s in groups["quiet_uncalled"]} == quiet - {"Tensor.to"}
    parts = ("tensor_called", "tensor_other", "torch_funcs", "cuda_funcs")
    assert sorted(a for p in parts for a in (s.api for s in groups[p])) == sorted(quiet)  # a partition
    assert {s.api for s in groups["tensor_dunders"]} <= {s.api for s in groups["tensor_other"]}

    owners = {id(s.owner): s.owner for s in cuda._shim_specs()}.values()
    before = [dict(vars(owner)) for owner in owners]
    detector = quiet_cuda.QuietCudaDetector()
    model = warm.build("cpu", layers=1, d=8)
    x, positions, ids = torch.randn(1, 4, 8), torch.arange(4), torch.arange(1)
    seen = []
    original_to, saved_step = torch.Tensor.to, warm.step

    def spy_step(*args):
        seen.append(torch.Tensor.to is not original_to)  # the arm's shim is in while the step runs
        return saved_step(*args)

    warm.step = spy_step
    try:
        with torch.inference_mode():
            for name in ("tensor_called", "quiet_uncalled", "inert_attr"):
                cost = warm.run_arm(name, groups.get(name, []), detector, model, x, positions, ids, 1, 1)
                assert cost >= 0
    finally:
        warm.step = saved_step
    assert seen == [True, True, False, False, False, False]
    after = [dict(vars(owner)) for owner in owners]
    assert [sorted(b) for b in before] == [sorted(a) for a in after]
    assert all(b[k] is a[k] for b, a in zip(before, after) for k in b)
    assert "_syncscope_inert" not in vars(torch.Tensor)


def test_the_runtime_benchs_bisection_arms_put_in_only_their_shims(monkeypatch):
    # bench/runtime_overhead.py's trap_no_shims / trap_only_copies / trap_no_copies (run on the
    # GPU) are the whole trap with a subset of the quiet detector's shims; a CPU build has no
    # sync-debug mode, so it is stood in for here.
    torch = pytest.importorskip("torch")
    runtime_overhead = _load_bench("runtime_overhead")
    from syncscope.runtime import cuda, quiet_cuda

    mode = [0]
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: mode[0])
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", lambda value: mode.__setitem__(0, value))
    quiet = {s.api for s in cuda._shim_specs()} - quiet_cuda.UNWRAPPED
    copies = {"Tensor.to", "Tensor.cuda", "Tensor.copy_"}
    specs = {s.api: s for s in cuda._shim_specs()}
    before = {id(s.owner): dict(vars(s.owner)) for s in specs.values()}

    def wrapped_now():
        return {api for api, s in specs.items()
                if s.name in vars(s.owner) and vars(s.owner)[s.name] is not before[id(s.owner)].get(s.name)}

    for keep, expected in ((lambda api: False, set()), (runtime_overhead._slim_copy, copies),
                           (lambda api: not runtime_overhead._slim_copy(api), quiet - copies)):
        with runtime_overhead._quiet_trap_wrapping(keep)():
            assert wrapped_now() == expected
            assert mode[0] == "warn"  # the rest of the trap is in
        assert wrapped_now() == set() and mode[0] == 0
    assert all(dict(vars(s.owner)) == before[id(s.owner)] for s in specs.values())
