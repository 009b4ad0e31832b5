"""Monitor mode's cost and accuracy (issue 12). Two measurements:

1. `overhead`: the sync-free step loop of bench/runtime_overhead.py, plain vs under the monitor
   (`--sample 0.01`, each step one region, as a server marks its decode step), rounds interleaved
   in one process (the order alternates each round); the figure is the median of the paired
   per-round ratios, with their spread (10th-90th percentile and min-max). On a GPU the real
   monitor runs (`syncscope.monitor(device="cuda")`: the detector installed for the sampled 1% of
   steps only). Without one, the CPU figure is the disarmed path alone (the region, the draw at
   its entry, the gate) around the same loop on CPU tensors: no detector can be armed there.

2. `rate`: a loop with exactly one sync per step, steadily paced, under
   `syncscope run --monitor --sample 0.01`, scraped by a real Prometheus server (Debian's
   `prometheus`, or the binary given with --prometheus); the sync's rate Prometheus reports,
   scaled by the sampled fraction of regions, against the true rate the loop measured itself:
   must be within 10%.

    python bench/monitor_overhead.py overhead [--steps 50] [--rounds 41] [--out r.json]
    python bench/monitor_overhead.py rate [--seconds 40] [--device cuda|sim] [--prometheus PATH] [--out r.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _quantile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- 1. overhead -------------------------------------------------------------------------------
def overhead(args) -> dict:
    import torch

    sys.path.insert(0, HERE)
    import runtime_overhead as ro  # the same model and step

    import syncscope
    from syncscope.runtime import regions

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    if not cuda:
        torch.set_num_threads(1)  # a shared 2-core host: keep the step on one core
    monitor = gate = None
    if cuda:
        monitor = syncscope.monitor(sample=args.sample, port=_free_port(), device="cuda", seed=0)
    else:
        # The monitor's own session, metrics (in their multiprocess files) and gate; only the
        # detector is missing, as there is no GPU to arm it for.
        from syncscope.monitoring import session as monitor_session
        from syncscope.monitoring.sampling import Gate

        cpu_session = monitor_session.start(monitor_session.MonitorOptions(sample=args.sample, port=None))
        metrics = cpu_session.make_metrics()
        gate = Gate(args.sample, seed=0, on_regions=metrics.on_regions)
        regions.sampler = gate

    def sync():
        if cuda:
            torch.cuda.synchronize()

    def run(steps, in_region):
        sync()
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(steps):
            if in_region:
                with regions.region("step"):
                    ro.step(model, x, positions, ids, device)
            else:
                ro.step(model, x, positions, ids, device)
        c1 = time.thread_time()
        sync()
        return (time.perf_counter() - t0) / steps, (c1 - c0) / steps

    with torch.inference_mode():
        model = ro.build(device, layers=args.layers)
        x = torch.randn(4, 32, 256, device=device)
        positions = torch.arange(32, device=device)
        ids = torch.arange(4).pin_memory() if cuda else torch.arange(4)
        for _ in range(3):
            run(10, False)
            run(10, True)
        wall = {"plain": [], "monitor": []}
        cpu = {"plain": [], "monitor": []}
        for r in range(args.rounds):
            order = ("plain", "monitor") if r % 2 == 0 else ("monitor", "plain")
            for arm in order:
                w, c = run(args.steps, arm == "monitor")
                wall[arm].append(w)
                cpu[arm].append(c)
    counts = (monitor.session.gate if monitor else gate).counts
    loop_regions, loop_sampled = counts.regions, counts.sampled
    detector = monitor.trap.detector if monitor else None
    loop_arms = getattr(detector, "arms", None)
    region_ns = _region_cost_ns(regions)  # the region's cost alone, per step, in isolation
    sampler, regions.sampler = regions.sampler, None
    region_alone_ns = _region_cost_ns(regions)  # the same region without the monitor's draw
    regions.sampler = sampler
    if monitor:
        events = len(monitor.trap.events)
        monitor.stop()
    else:
        regions.sampler = None
        events = 0

    from paired_stats import median_ratio_interval  # bench/paired_stats.py (issue 15)

    def paired(a, b):
        ratios = [m / p for p, m in zip(a, b)]
        return {
            "median": statistics.median(ratios),
            "ci95": list(median_ratio_interval(a, b).to_json()["ci95"]),  # bootstrap over the rounds
            "p10": _quantile(ratios, 0.1),
            "p90": _quantile(ratios, 0.9),
            "min": min(ratios),
            "max": max(ratios),
        }

    return {
        "what": "monitor" if cuda else "no GPU: region + draw + gate + region counters; no detector to arm",
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__,
        "sample": args.sample,
        "steps_per_round": args.steps,
        "rounds": args.rounds,
        "plain_step_ms": statistics.median(wall["plain"]) * 1e3,
        "monitor_step_ms": statistics.median(wall["monitor"]) * 1e3,
        "wall_ratio": paired(wall["plain"], wall["monitor"]),
        "cpu_ratio": paired(cpu["plain"], cpu["monitor"]),
        # The same cost measured in isolation (no step around it): robust to the noise of a shared
        # host, where the paired ratios above spread widely.
        "region_entry_ns": region_ns,
        "region_entry_over_plain_step": region_ns / (statistics.median(cpu["plain"]) * 1e9),
        "region_without_monitor_ns": region_alone_ns,  # syncscope.region()'s own cost: the rest is the monitor's
        "regions": loop_regions,
        "sampled_regions": loop_sampled,
        "detector_arms": loop_arms,  # GPU: how often the detector was installed for a sampled step
        "syncs_recorded": events,  # the loop is sync-free: must be 0
    }


def _region_cost_ns(regions, calls=200_000) -> float:
    """Thread CPU time of one `with region("step"): pass` minus an empty loop's, per call (the
    region's entry and exit with the monitor's draw; sampled ones included at the set rate)."""
    def loop(in_region):
        c0 = time.thread_time_ns()
        if in_region:
            for _ in range(calls):
                with regions.region("step"):
                    pass
        else:
            for _ in range(calls):
                pass
        return (time.thread_time_ns() - c0) / calls

    return statistics.median(loop(True) - loop(False) for _ in range(5))


# -- 2. rate -----------------------------------------------------------------------------------
def sync_loop(args) -> None:
    """Runs under `syncscope run --monitor`: one region and one sync per step, paced steadily."""
    import torch

    from syncscope.runtime import regions

    x = torch.randn(64, 64, device="cuda")
    period = args.step_period
    start = time.time()
    deadline = start + args.seconds
    steps = 0
    marks = []  # (unix time, steps so far), ten times a second: the truth for any window
    next_at = time.perf_counter()
    while time.time() < deadline:
        if not marks or time.time() - marks[-1][0] >= 0.1:
            marks.append((time.time(), steps))
        with regions.region("step"):
            value = (x @ x).sum().item()  # the one sync of the step
        steps += 1
        next_at += period
        delay = next_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    end = time.time()
    marks.append((end, steps))
    with open(args.out, "w") as fh:
        json.dump({"start": start, "end": end, "steps": steps, "marks": marks, "value": value}, fh)


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _query(api, expr, at):
    body = _get(f"http://127.0.0.1:{api}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"}))
    result = body["data"]["result"]
    return float(result[0]["value"][1]) if result else float("nan")


@contextlib.contextmanager
def prometheus_server(binary, metrics_port, workdir):
    api = _free_port()
    config = os.path.join(workdir, "prometheus.yml")
    with open(config, "w") as fh:
        fh.write(f"global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n"
                 f"  - job_name: bench\n    static_configs:\n      - targets: ['127.0.0.1:{metrics_port}']\n")
    log = open(os.path.join(workdir, "prometheus.log"), "w")
    proc = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={workdir}/data",
                             f"--web.listen-address=127.0.0.1:{api}"], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                targets = _get(f"http://127.0.0.1:{api}/api/v1/targets")["data"]["activeTargets"]
                if any(not t["lastScrape"].startswith("0001") for t in targets):
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("prometheus did not start; see " + log.name)
            time.sleep(0.2)
        yield api
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _steps_at(marks, t):
    """Steps done by unix time t, interpolated between the loop's marks."""
    for (t0, n0), (t1, n1) in zip(marks, marks[1:]):
        if t0 <= t <= t1:
            return n0 + (n1 - n0) * (t - t0) / (t1 - t0) if t1 > t0 else n1
    raise ValueError("time outside the loop")


def rate(args) -> dict:
    binary = args.prometheus or shutil.which("prometheus") or os.path.join(REPO, ".bench", "prometheus")
    if not os.path.exists(binary):
        raise SystemExit("no Prometheus server: apt-get install prometheus, or --prometheus PATH")
    workdir = tempfile.mkdtemp(prefix="syncscope-bench-")
    metrics_port = _free_port()
    truth = os.path.join(workdir, "true.json")
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with prometheus_server(binary, metrics_port, workdir) as api:
        subprocess.run(
            [sys.executable, "-m", "syncscope", "run", "--monitor", "--sample", str(args.sample), "--device", args.device,
             "--metrics-port", str(metrics_port), "--no-table", "-o", os.path.join(workdir, "r.json"),
             os.path.abspath(__file__), "_sync_loop", "--seconds", str(args.seconds),
             "--step-period", str(args.step_period), "--out", truth],
            env=env, check=True,
        )
        true = json.load(open(truth))
        time.sleep(2)  # the last scrape is stored
        # A window inside the steady loop: from 5 s after its start to 1 s before its end.
        at = true["end"] - 1
        window = int(true["end"] - 1 - (true["start"] + 5))
        w = f"[{window}s]"
        syncs = _query(api, f"sum(rate(syncscope_host_syncs_total{w}))", at)
        regions = _query(api, f"sum(rate(syncscope_regions_total{w}))", at)
        sampled = _query(api, f"sum(rate(syncscope_sampled_regions_total{w}))", at)
    # The true rate over the same window (the loop need not be steady on a busy host).
    true_rate = (_steps_at(true["marks"], at) - _steps_at(true["marks"], at - window)) / window
    scaled = syncs * regions / sampled  # scaled by the sampled fraction the process measured
    nominal = syncs / args.sample  # scaled by the configured rate: carries the sampling noise
    result = {
        "device": args.device,
        "sample": args.sample,
        "seconds": args.seconds,
        "window_s": window,
        "true_rate_per_s": true_rate,
        "prometheus_sampled_sync_rate_per_s": syncs,
        "prometheus_sampled_fraction": sampled / regions if regions else None,
        "estimated_rate_per_s": scaled,
        "estimated_over_true": scaled / true_rate,
        "nominal_estimate_per_s": nominal,
        "nominal_over_true": nominal / true_rate,
        "within_10_percent": abs(scaled / true_rate - 1) <= 0.10,
    }
    shutil.rmtree(workdir, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    o = sub.add_parser("overhead")
    o.add_argument("--steps", type=int, default=50)
    o.add_argument("--rounds", type=int, default=41)
    o.add_argument("--layers", type=int, default=12)
    o.add_argument("--sample", type=float, default=0.01)
    o.add_argument("--out")
    r = sub.add_parser("rate")
    r.add_argument("--seconds", type=float, default=40)
    r.add_argument("--step-period", type=float, default=0.002)
    r.add_argument("--sample", type=float, default=0.01)
    r.add_argument("--device", default="cuda", choices=("cuda", "sim"))
    r.add_argument("--prometheus")
    r.add_argument("--out")
    loop = sub.add_parser("_sync_loop")
    loop.add_argument("--seconds", type=float, required=True)
    loop.add_argument("--step-period", type=float, required=True)
    loop.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.command == "_sync_loop":
        return sync_loop(args)
    result = overhead(args) if args.command == "overhead" else rate(args)
    print(json.dumps(result, indent=1))
    if args.command == "overhead":
        w, c = result["wall_ratio"], result["cpu_ratio"]
        print(f"monitor overhead ({result['what']}), sample {args.sample}: wall {100 * (w['median'] - 1):+.3f}% "
              f"(95% CI {100 * (w['ci95'][0] - 1):+.2f}..{100 * (w['ci95'][1] - 1):+.2f}%) "
              f"(p10..p90 {100 * (w['p10'] - 1):+.2f}..{100 * (w['p90'] - 1):+.2f}%), thread CPU {100 * (c['median'] - 1):+.3f}% "
              f"(p10..p90 {100 * (c['p10'] - 1):+.2f}..{100 * (c['p90'] - 1):+.2f}%); {result['sampled_regions']}/{result['regions']} steps sampled; "
              f"region entry in isolation {result['region_entry_ns']:.0f} ns = {100 * result['region_entry_over_plain_step']:.4f}% of a plain step "
              f"(the region alone, no monitor: {result['region_without_monitor_ns']:.0f} ns)")
    else:
        print(f"sync rate: true {result['true_rate_per_s']:.1f}/s, Prometheus (scaled by the sampled fraction) "
              f"{result['estimated_rate_per_s']:.1f}/s ({100 * (result['estimated_over_true'] - 1):+.1f}%), "
              f"by the nominal rate {result['nominal_estimate_per_s']:.1f}/s ({100 * (result['nominal_over_true'] - 1):+.1f}%)")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
