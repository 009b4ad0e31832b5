"""bench/sim_overhead.py keeps running, all three paths (inference, compiled, autograd), in a tiny
configuration; the figures themselves are recorded in docs/simulated-device.md, measured with the
default configuration."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "sim_overhead.py"


def test_sim_overhead_bench_runs_and_matches_cpu_eager(capsys):
    spec = importlib.util.spec_from_file_location("sim_overhead_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--steps", "5", "--rounds", "1", "--layers", "1", "--compile-backend", "eager"])  # asserts equal outputs
    assert result["ops_per_step"] > 20
    assert result["overhead_us_per_op"] > 0 and result["ratio"] > 1
    compiled = result["compiled"]
    assert compiled["ops_per_call"] > 10 and compiled["sim_ms"] > 0 and compiled["cpu_compiled_ms"] > 0
    autograd = result["autograd"]
    out = capsys.readouterr().out
    assert "us per dispatched op" in out and "compiled (eager):" in out
    if autograd["simulated"]:  # a training step on simulated tensors, losses equal to CPU's
        assert autograd["ops_per_step"] > 10 and autograd["ratio"] > 0 and "autograd: ops/step=" in out
    else:
        assert autograd["reason"] and "autograd: not simulated yet" in out
