"""bench/sim_overhead.py keeps running (a tiny configuration; the figure itself is recorded in
docs/simulated-device.md, measured with the default configuration)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "sim_overhead.py"


def test_sim_overhead_bench_runs_and_matches_cpu_eager(capsys):
    spec = importlib.util.spec_from_file_location("sim_overhead_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--steps", "5", "--rounds", "1", "--layers", "1"])  # asserts equal tokens
    assert result["ops_per_step"] > 20
    assert result["overhead_us_per_op"] > 0 and result["ratio"] > 1
    assert "us per dispatched op" in capsys.readouterr().out
