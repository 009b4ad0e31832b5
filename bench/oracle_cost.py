"""What the blocking-line oracle costs on the sync catalog (run on a GPU machine).

    python bench/oracle_cost.py [--repeat 3] [--tracer auto|settrace|monitoring] [--json PATH]

Measures, in one process: the catalog's plain run time; the calibration; one oracle measurement of
`run_catalog` (1 warm-up call, then --repeat x (a pass behind queued work + a pass on an idle
GPU)), as wall time per traced line run and per catalog source line; and the tracer alone (line
boundaries with no GPU work at all), which is what a free line costs beyond its own work.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tracer", default="auto")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args()

    from syncscope.oracle.cuda import OracleUnavailable, require_cuda

    try:
        torch = require_cuda()
    except OracleUnavailable as exc:
        print(f"oracle_cost: {exc}", file=sys.stderr)
        raise SystemExit(2)
    from syncscope.oracle.api import measure_function, start_session
    from syncscope.oracle.measure import measured_code
    from syncscope.oracle.tracer import make_line_timer
    from tests.catalog.sync_catalog import run_catalog

    run_catalog("cuda")
    torch.cuda.synchronize()
    plain = []
    for _ in range(5):
        start = time.perf_counter()
        run_catalog("cuda")
        torch.cuda.synchronize()
        plain.append(time.perf_counter() - start)

    timer = make_line_timer(args.tracer)
    code = measured_code(run_catalog)
    traced_only = []
    for _ in range(5):
        boundaries = []
        start = time.perf_counter()
        timer.run(code, lambda line: boundaries.append(time.perf_counter_ns()), run_catalog, ("cuda",), {})
        torch.cuda.synchronize()
        traced_only.append(time.perf_counter() - start)
    tracer_overhead_us = (statistics.median(traced_only) - statistics.median(plain)) / max(1, len(boundaries) - 1) * 1e6

    start = time.perf_counter()
    session = start_session(repeat=args.repeat, tracer=args.tracer)
    calibration_s = time.perf_counter() - start
    start = time.perf_counter()
    measured = measure_function(run_catalog, "cuda", session=session)
    wall = time.perf_counter() - start
    sample = session.samples[-1]
    queued_runs = sum(p.line_hits for p in sample.queued)
    idle_runs = sum(p.line_hits for p in sample.idle)
    lines = measured.lines
    blocked = sum(r.verdict == "blocked" for r in lines)
    figures = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "python": sys.version.split()[0],
        "tracer": session.timer.name,
        "repeat": args.repeat,
        "sleep_ms": session.calibration.sleep_ns / 1e6,
        "calibration_s": round(calibration_s, 3),
        "catalog_plain_ms": round(statistics.median(plain) * 1e3, 3),
        "oracle_wall_s": round(wall, 3),
        "catalog_lines": len(lines),
        "blocked_lines": blocked,
        "traced_line_runs": queued_runs + idle_runs,
        "fresh_sleeps": session.fresh_sleeps,
        "ms_per_traced_line_run": round(wall * 1e3 / (queued_runs + idle_runs), 3),
        "ms_per_catalog_line": round(wall * 1e3 / len(lines), 3),
        "tracer_only_us_per_line": round(tracer_overhead_us, 2),
    }
    print(
        f"oracle cost on the catalog [{figures['tracer']}, repeat {args.repeat}, sleep {figures['sleep_ms']:.1f} ms, {figures['gpu']}]: "
        f"{wall:.2f} s for {len(lines)} lines ({blocked} blocked), {figures['traced_line_runs']} traced line runs: "
        f"{figures['ms_per_traced_line_run']:.2f} ms per traced line run, {figures['ms_per_catalog_line']:.1f} ms per catalog line; "
        f"plain catalog {figures['catalog_plain_ms']:.2f} ms; calibration {calibration_s:.2f} s; "
        f"tracer alone {figures['tracer_only_us_per_line']:.1f} us per line"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n")


if __name__ == "__main__":
    main()
