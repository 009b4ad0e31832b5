"""Monitor mode's cost and accuracy (issue 12). Two measurements:

1. `overhead`: the sync-free step loop of bench/runtime_overhead.py, plain vs under the monitor
   (each step one region, as a server marks its decode step), arms interleaved in one process in
   short rounds (a fresh random order each round). A monitor at rate s with runs of B sampled
   regions costs (1 - s) x an unsampled step's overhead + s x a sampled step's, and a sampled
   step pays the shims plus 1/B of one arm-and-disarm of the detector. Measured as arms of their
   own: `disarmed` (the gate runs and (almost) never samples), `installed` (every step sampled,
   the detector in all along: the shims' cost) and `cycled` (every step sampled and the detector
   armed at its entry and taken out at its exit: shims + one arm and disarm per step); the
   figure is 1 + (1 - s)(d - 1) + s((i - 1) + (c - i) / B) of their median paired ratios, with a
   bootstrap 95% interval. `disarmed_scoped` is the disarmed arm with the step wrapped as `--scope`
   wraps a function (no region object when unsampled), and gives the same figure for a scoped
   step. The time-sliced figure (`--sample-by time`, a loop with no region) is
   1 + s(i - 1) + (c - i) x step / period: nothing runs per step while the trap is out.
   The real monitor at rate s is one more arm, for reference (the median
   of its rounds cannot see the rare sampled runs). On a GPU the real monitor runs
   (`syncscope.monitor(device="cuda")`). Without one, the CPU figure is the region and the gate
   alone around the same loop on CPU tensors: no detector to arm.

2. `rate`: a loop with exactly one sync per step, steadily paced, under
   `syncscope run --monitor --sample 0.01`, scraped by a real Prometheus server (Debian's
   `prometheus`, or the binary given with --prometheus); the sync's rate Prometheus reports,
   scaled by the sampled fraction of regions, against the true rate the loop measured itself:
   must be within 10%.

    python bench/monitor_overhead.py overhead [--steps 5] [--rounds 1500] [--max-seconds 300] [--sample-run 8] [--out r.json]
    python bench/monitor_overhead.py rate [--seconds 40] [--device cuda|sim] [--prometheus PATH] [--out r.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
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


# -- 1. overhead -------------------------------------------------------------------------------
def overhead(args) -> dict:
    import torch

    sys.path.insert(0, HERE)
    import runtime_overhead as ro  # the same model and step

    import syncscope
    from paired_stats import median_ratio_interval, quantile
    from syncscope.monitoring.sampling import Gate
    from syncscope.runtime import regions

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    torch.manual_seed(0)
    if not cuda:
        torch.set_num_threads(1)  # a shared 2-core host: keep the step on one core
    monitor = None
    if cuda:
        monitor = syncscope.monitor(sample=args.sample, sample_run=args.sample_run, port=_free_port(), device="cuda", seed=0)
        real_gate = monitor.session.gate
        arm, disarm, on_regions = real_gate._arm_detector, real_gate._disarm_detector, real_gate._on_regions
    else:
        # The monitor's own session and metrics (in their multiprocess files); only the detector
        # is missing, as there is no GPU to arm it for.
        from syncscope.monitoring import session as monitor_session

        cpu_session = monitor_session.start(monitor_session.MonitorOptions(sample=args.sample, port=None))
        arm = disarm = lambda: None  # noqa: E731
        on_regions = cpu_session.make_metrics().on_regions
    # See the docstring: `disarmed` samples (almost) never; `installed` samples every step with
    # the detector in all along (put in before the timed steps, taken out after them); `cycled`
    # samples every step and arms and disarms around each one, as a run of one region would.
    gates = {
        "monitor": regions.trap_state().sampler if cuda else Gate(args.sample, run_length=args.sample_run, seed=0, on_regions=on_regions),
        "disarmed": Gate(1e-12, seed=0, on_regions=on_regions),
        # The same, with the step wrapped as `--scope` wraps a function (regions.run_in_region).
        "disarmed_scoped": Gate(1e-12, seed=0, on_regions=on_regions),
    }
    scoped_step = regions.run_in_region(ro.step, "step")
    gates["installed"] = Gate(1.0, seed=0, arm_detector=arm, disarm_detector=disarm, on_regions=on_regions)
    gates["cycled"] = Gate(1.0, seed=0, on_regions=on_regions)
    regions.trap_state().sampler = None

    def sync():
        if cuda:
            ro._HARNESS_SYNC()  # torch's, unwrapped: the harness's wait is not the step's (runtime_overhead.py)

    def run(steps, name):
        gate = arms[name]
        if name == "installed":
            arm()  # the gate's own arm at the first region is then a no-op
        sync()
        regions.trap_state().sampler = gate
        t0, c0 = time.perf_counter(), time.thread_time()
        for _ in range(steps):
            if name == "cycled":
                arm()
                with regions.region("step"):
                    ro.step(model, x, positions, ids, device)
                disarm()
            elif name == "disarmed_scoped":
                scoped_step(model, x, positions, ids, device)
            elif name == "region_alone":  # no gate: what marking the step costs without a monitor
                with regions.region("step"):
                    ro.step(model, x, positions, ids, device)
            elif name == "null_with":  # the floor: a `with` that does nothing, next to the step
                with null_region:
                    ro.step(model, x, positions, ids, device)
            elif name == "region_reused":  # the real monitor, one region object entered every step
                with reused_region:
                    ro.step(model, x, positions, ids, device)
            elif gate is not None:
                with regions.region("step"):
                    ro.step(model, x, positions, ids, device)
            else:
                ro.step(model, x, positions, ids, device)
        c1 = time.thread_time()
        sync()
        elapsed = time.perf_counter() - t0
        regions.trap_state().sampler = None
        if name in ("installed", "monitor", "region_reused"):
            # Outside the timed steps: the next arm must not run with the detector in (the
            # monitor's run may go on past its round; its next region puts the detector back).
            gate.take_detector_out()
        return elapsed / steps, (c1 - c0) / steps

    # Two references that say where an unsampled step's cost lies: the same region with no
    # monitor, and a context manager that does nothing at all (the cost of any `with` next to a
    # launch-bound step; below it no region marking can go).
    null_region = _NullRegion()
    # And the real monitor's gate with one region object made before the loop and entered every
    # step: what constructing the object costs next to the step, against the `monitor` arm.
    reused_region = regions.region("step")
    arms = {"plain": None, **gates, "region_alone": None, "null_with": None, "region_reused": gates["monitor"]}
    with torch.inference_mode():
        model = ro.build(device, layers=args.layers)
        x = torch.randn(4, 32, 256, device=device)
        positions = torch.arange(32, device=device)
        ids = torch.arange(4).pin_memory() if cuda else torch.arange(4)
        for _ in range(3):
            for name in arms:
                run(5, name)
        wall = {name: [] for name in arms}
        cpu = {name: [] for name in arms}
        started = time.monotonic()
        # Each round runs the arms in a fresh random order: with a fixed or alternating order an
        # arm's neighbours are always the same (the disarmed arm always beside the armed one), and
        # on the H100 host that position alone moved an arm by ~1% (a `debug_mode_only` arm of
        # runtime_overhead.py came out 1.1% faster than plain).
        order = random.Random(1)
        for _ in range(args.rounds):
            names = list(arms)
            order.shuffle(names)
            for name in names:
                w, c = run(args.steps, name)
                wall[name].append(w)
                cpu[name].append(c)
            if time.monotonic() - started > args.max_seconds:
                break
    regions.trap_state().sampler = gates["monitor"]
    counts = gates["monitor"].counts
    loop_regions, loop_sampled = counts.regions, counts.sampled
    detector = monitor.trap.detector if monitor else None
    arm_disarm_us = arm_disarm_wait = None
    if cuda:  # what a run of sampled steps pays at its first region's entry and last one's exit, in isolation
        began = time.perf_counter()
        for _ in range(200):
            arm()
            disarm()
        arm_disarm_us = (time.perf_counter() - began) / 200 * 1e6
        arm_disarm_wait = _wait_behind_queue(lambda: (arm(), disarm()))
    region_ns = _region_cost_ns(regions)  # the real monitor's region entry, per step, in isolation
    state = regions.trap_state()
    sampler, state.sampler = state.sampler, None
    region_alone_ns = _region_cost_ns(regions)  # the same region without the monitor's gate
    regions.trap_state().sampler = sampler
    if monitor:
        events = len(monitor.trap.events)
        monitor.stop()
    else:
        regions.trap_state().sampler = None
        events = 0

    def paired(a, b):
        ratios = [m / p for p, m in zip(a, b)]
        return {
            "median": statistics.median(ratios),
            "ci95": list(median_ratio_interval(a, b, resamples=1000).to_json()["ci95"]),  # bootstrap over the rounds
            "p10": quantile(ratios, 0.1),
            "p90": quantile(ratios, 0.9),
            "mean": statistics.fmean(ratios),
        }

    return {
        "what": "monitor" if cuda else "no GPU: region + gate + region counters; no detector to arm",
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "torch": torch.__version__,
        "sample": args.sample,
        "steps_per_round": args.steps,
        "rounds": len(wall["plain"]),
        "plain_step_ms": statistics.median(wall["plain"]) * 1e3,
        "sample_run": args.sample_run,
        # The figure: (1 - s) x an unsampled step + s x a sampled one (shims + 1/B of an arm and disarm).
        "mixed_wall_ratio": _mixed(wall, args.sample, args.sample_run),
        "mixed_cpu_ratio": _mixed(cpu, args.sample, args.sample_run),
        # The same figure for a step scoped as `--scope` scopes it (no region object when unsampled).
        "mixed_scoped_wall_ratio": _mixed(wall, args.sample, args.sample_run, disarmed="disarmed_scoped"),
        # Time slicing (`--sample-by time`, for programs without regions): no region code runs per
        # step; the detector is in for a fraction s of the time and armed once per slice period.
        "time_mode_wall_ratio": _time_sliced(wall, args.sample, args.slice_period),
        "slice_period_s": args.slice_period,
        "wall_ratio_by_arm": {name: paired(wall["plain"], wall[name]) for name in arms if name != "plain"},
        "cpu_ratio_by_arm": {name: paired(cpu["plain"], cpu[name]) for name in arms if name != "plain"},
        # The region's cost measured in isolation (no step around it).
        "region_entry_ns": region_ns,
        "region_entry_over_plain_step": region_ns / (statistics.median(cpu["plain"]) * 1e9),
        "region_without_monitor_ns": region_alone_ns,  # syncscope.region()'s own cost: the rest is the monitor's
        "regions": loop_regions,  # of the real monitor's arm
        "sampled_regions": loop_sampled,
        "arm_disarm_us": arm_disarm_us,
        # Arm + disarm timed behind ~10 ms of queued GPU work, as a fraction of it: near 0 unless
        # arming or disarming waits for the GPU (a sync of syncscope's own, which must not be).
        "arm_disarm_wait_behind_queue": arm_disarm_wait,
        "detector_arms": getattr(detector, "arms", None),  # GPU: installs, the armed arm's steps included
        "syncs_recorded": events,  # the loop is sync-free: must be 0
        # Every round's wall time per step, by arm (ms), to look at the host's noise afterwards.
        "wall_rounds_ms": {name: [round(w * 1e3, 4) for w in wall[name]] for name in arms},
    }


class _NullRegion:
    """A context manager shaped like `syncscope.region` (slots, two methods) that does nothing."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, traceback) -> bool:
        return False


def _wait_behind_queue(fn) -> float:
    """`fn`'s time behind a calibrated ~10 ms GPU sleep, as a fraction of it (the oracle's test)."""
    from syncscope.oracle.cuda import CudaGpu
    from syncscope.oracle.timing import calibrate, wait_behind_queue

    gpu = CudaGpu()
    return wait_behind_queue(gpu, time.perf_counter_ns, calibrate(gpu, time.perf_counter_ns, 10_000_000), fn)


def _mixed(times: dict, sample: float, run_length: int, resamples: int = 2000, disarmed: str = "disarmed") -> dict:
    """1 + (1 - s)(d - 1) + s((i - 1) + (c - i) / B), with d, i and c the median paired ratios of
    the disarmed, installed and cycled arms (c - i: one arm and disarm, paid once per run of B),
    and its percentile-bootstrap 95% interval (rounds resampled, all arms together)."""

    def estimate(rows):
        d, i, c = (statistics.median(times[arm][r] / times["plain"][r] for r in rows) for arm in (disarmed, "installed", "cycled"))
        return 1 + (1 - sample) * (d - 1) + sample * ((i - 1) + (c - i) / run_length)

    return _with_interval(estimate, len(times["plain"]), resamples)


def _time_sliced(times: dict, sample: float, period_s: float, resamples: int = 2000) -> dict:
    """1 + s(i - 1) + (c - i) x step / period, with i and c the installed and cycled arms' median
    paired ratios: in time mode a step pays nothing while the trap is out (the slicer thread
    sleeps in C), the shims while it is in (a fraction s of the time), and one arm and disarm
    ((c - i) plain steps' worth) per slice period; with its percentile-bootstrap 95% interval."""

    def estimate(rows):
        step = statistics.median(times["plain"][r] for r in rows)
        i, c = (statistics.median(times[arm][r] / times["plain"][r] for r in rows) for arm in ("installed", "cycled"))
        return 1 + sample * (i - 1) + (c - i) * step / period_s

    return _with_interval(estimate, len(times["plain"]), resamples)


def _with_interval(estimate, rounds: int, resamples: int) -> dict:
    """A figure computed from round indices, over all rounds, with its percentile-bootstrap 95%
    interval (rounds resampled, all arms of a round together)."""
    from paired_stats import bootstrap_interval

    return {"ratio": estimate(range(rounds)), "ci95": list(bootstrap_interval(estimate, rounds, resamples=resamples))}


def _region_cost_ns(regions, calls=200_000) -> float:
    """Thread CPU time of one `with region("step"): pass` minus an empty loop's, per call (the
    region's entry and exit with the monitor's gate; sampled ones included at the set rate)."""
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
    # Short rounds, many: see bench/runtime_overhead.py (the GPU hosts' slow spells).
    o.add_argument("--steps", type=int, default=5)
    o.add_argument("--rounds", type=int, default=1500)
    o.add_argument("--max-seconds", type=float, default=300.0, help="stop adding rounds after this long")
    o.add_argument("--layers", type=int, default=12)
    o.add_argument("--sample", type=float, default=0.01)
    o.add_argument("--sample-run", type=int, default=8, help="the monitor's run length (sampled regions in a row)")
    o.add_argument("--slice-period", type=float, default=1.0, help="the time-sliced figure's period (--slice-period of run)")
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
        mix, by_arm = result["mixed_wall_ratio"], result["wall_ratio_by_arm"]

        def pct(r):
            return f"{100 * (r - 1):+.3f}%"

        print(f"monitor overhead ({result['what']}), sample {args.sample}, {result['rounds']} rounds of {args.steps} steps: "
              f"wall {pct(mix['ratio'])} (95% CI {pct(mix['ci95'][0])}..{pct(mix['ci95'][1])}); thread CPU "
              f"{pct(result['mixed_cpu_ratio']['ratio'])}; with the step scoped as --scope does {pct(result['mixed_scoped_wall_ratio']['ratio'])} "
              f"(95% CI {pct(result['mixed_scoped_wall_ratio']['ci95'][0])}..{pct(result['mixed_scoped_wall_ratio']['ci95'][1])}); time-sliced (no regions, period {args.slice_period:g} s) wall "
              f"{pct(result['time_mode_wall_ratio']['ratio'])} (95% CI {pct(result['time_mode_wall_ratio']['ci95'][0])}.."
              f"{pct(result['time_mode_wall_ratio']['ci95'][1])}); by arm (median paired wall ratio, p10..p90): "
              + ", ".join(f"{name} {pct(v['median'])} ({pct(v['p10'])}..{pct(v['p90'])})" for name, v in by_arm.items())
              + f"; region entry in isolation {result['region_entry_ns']:.0f} ns = {100 * result['region_entry_over_plain_step']:.4f}% "
              f"of a plain step (the region alone, no monitor: {result['region_without_monitor_ns']:.0f} ns); "
              f"arm + disarm {result['arm_disarm_us'] or 0:.0f} us "
              f"(behind 10 ms of queued GPU work: {result['arm_disarm_wait_behind_queue'] or 0:.2f} of it)")
    else:
        print(f"sync rate: true {result['true_rate_per_s']:.1f}/s, Prometheus (scaled by the sampled fraction) "
              f"{result['estimated_rate_per_s']:.1f}/s ({100 * (result['estimated_over_true'] - 1):+.1f}%), "
              f"by the nominal rate {result['nominal_estimate_per_s']:.1f}/s ({100 * (result['nominal_over_true'] - 1):+.1f}%)")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
