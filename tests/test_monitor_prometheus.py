"""Monitor mode against a real Prometheus server (Debian's `prometheus`, which .ci/run installs).

The test starts Prometheus with a temporary config and data directory, scraping a serving loop
with two spawned worker processes under `syncscope run --monitor --device sim`, then asks the
server's HTTP API for every site's count and compares it with the JSON reports of the run (the
parent's and each worker's): equal for every site, including those of the worker that exited
while the other was still serving.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import urllib.parse
import urllib.request

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(REPO, "examples", "serve_workers.py")
PROMETHEUS = shutil.which("prometheus")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        PROMETHEUS is None,
        reason="the Prometheus server is not installed here (.ci/run installs Debian's `prometheus`; "
        "`apt-get install -y prometheus` failed or was not run)",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    with urllib.request.urlopen(url, timeout=5) as response:
        return response.read()


def _query(api: int, expr: str) -> list[dict]:
    body = json.loads(_get(f"http://127.0.0.1:{api}/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
    assert body["status"] == "success", body
    return body["data"]["result"]


@pytest.fixture
def prometheus(tmp_path):
    """A Prometheus server scraping 127.0.0.1:<metrics port> every second. Yields (api port, metrics port).
    The timeout is most of the interval: on a loaded 2-core machine reading the metrics files took
    longer than the 150 ms first allowed here, Prometheus dropped that scrape, and the last one of a
    run (the one `syncscope run` waits for at exit) was lost to the server, not to syncscope."""
    metrics_port, api_port = _free_port(), _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(textwrap.dedent(f"""
        global:
          scrape_interval: 1s
          scrape_timeout: 900ms
        scrape_configs:
          - job_name: syncscope
            static_configs:
              - targets: ["127.0.0.1:{metrics_port}"]
        """))
    log = open(tmp_path / "prometheus.log", "w")
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}",
         f"--web.listen-address=127.0.0.1:{api_port}"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _get(f"http://127.0.0.1:{api_port}/-/ready")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("prometheus did not start: " + (tmp_path / "prometheus.log").read_text()[-2000:])
                time.sleep(0.2)
        # The scrape manager takes its targets a few seconds after the server is ready: wait
        # until it has tried ours once (down: nothing listens yet), so it scrapes the whole run.
        while not any(
            not t["lastScrape"].startswith("0001")
            for t in json.loads(_get(f"http://127.0.0.1:{api_port}/api/v1/targets"))["data"]["activeTargets"]
        ):
            if time.monotonic() > deadline:
                pytest.fail("prometheus never scraped its target")
            time.sleep(0.2)
        yield api_port, metrics_port
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _held_sync_counts(api: int, expected: dict, timeout: float = 20.0) -> dict:
    """The per-site sync counts Prometheus holds, asked again until they equal `expected` or time
    runs out (the last scrape may still be being stored). Prometheus marks a target's series
    stale once it stops answering, so this asks for the last value each series had."""
    deadline = time.monotonic() + timeout
    while True:
        series = _query(api, "max_over_time(syncscope_host_syncs_total[10m])")
        held = {(s["metric"]["site"], s["metric"]["kind"], s["metric"]["function"]): int(float(s["value"][1])) for s in series}
        if held == expected or time.monotonic() > deadline:
            return held
        time.sleep(0.5)


def _report_counts(paths) -> dict[tuple[str, str, str], int]:
    counts: dict[tuple[str, str, str], int] = collections.Counter()
    for path in paths:
        for site in json.load(open(path))["sites"]:
            if site["in_scope"]:
                counts[(f"{site['path']}:{site['line']}", site["kind"], site["function"])] += site["count"]
    return dict(counts)


def test_prometheus_holds_the_sampled_counts_of_every_process(prometheus, tmp_path):
    api_port, metrics_port = prometheus
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(EXAMPLE, work / "serve_workers.py")
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    run = subprocess.run(
        # Runs of 1: with the default runs of 8 at 0.5, a worker with 30 regions has no sampled
        # one about 3% of the time (first gap geometric, P(start) = 0.5 / (0.5 + 8 x 0.5)), and
        # the check below that every worker recorded something failed once in CI.
        [sys.executable, "-m", "syncscope", "run", "--monitor", "--sample", "0.5", "--sample-run", "1", "--device", "sim",
         "--metrics-port", str(metrics_port), "--metrics-exit-wait", "30", "--no-table", "-o", "out/r.json",
         "serve_workers.py", "--batches", "6", "--steps", "10", "--step-sleep", "0.03"],
        cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "worker exit codes [0, 0]" in run.stdout

    reports = sorted(glob.glob(str(work / "out" / "*.json")))
    assert len(reports) == 3, reports  # the front end and the two workers
    loaded = [json.load(open(p)) for p in reports]
    assert all(r["sampled"] is True and r["sampling"]["rate"] == 0.5 for r in loaded)
    expected = _report_counts(reports)
    # The workers' per-step sites are sampled (90 regions at 0.5); the once-in-ten-steps
    # synchronize and the front end's copies (9 regions, and 1 at the very end) may be.
    assert {k[0].rsplit(":", 1)[0] for k in expected} == {"serve_workers.py"}
    assert {k[1] for k in expected} >= {"tolist", "item"}, expected
    worker_reports = [r for r in loaded if r.get("process_name", "").startswith("worker")]
    assert len(worker_reports) == 2 and all(r["summary"]["in_scope_events"] > 0 for r in worker_reports)

    assert _held_sync_counts(api_port, expected) == expected

    sampled = _query(api_port, "max_over_time(syncscope_sampled_regions_total[10m])")
    regions = _query(api_port, "max_over_time(syncscope_regions_total[10m])")
    assert int(float(sampled[0]["value"][1])) == sum(r["sampling"]["sampled_regions"] for r in loaded)
    assert int(float(regions[0]["value"][1])) == sum(r["sampling"]["regions"] for r in loaded)
    # The run was scraped while it ran, not only at the end.
    scrapes = _query(api_port, "count_over_time(up[10m])")
    assert int(float(scrapes[0]["value"][1])) >= 5
    # Every query of the example dashboard is valid PromQL and finds the run's series.
    dashboard = json.load(open(os.path.join(REPO, "examples", "grafana-dashboard.json")))
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            expr = target["expr"].replace("$__rate_interval", "10m").replace("$__range", "10m")
            if "histogram_quantile" in expr:
                continue  # the simulated device measures no wait: the histogram is empty
            assert _query(api_port, expr), (panel["title"], expr)


def test_the_example_prometheus_config_is_valid():
    promtool = shutil.which("promtool")
    check = subprocess.run([promtool, "check", "config", os.path.join(REPO, "examples", "prometheus.yml")],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


LAST_SYNC_PROGRAM = textwrap.dedent(
    """
    import time
    import torch
    import syncscope

    x = torch.ones(8, device="cuda")
    for i in range(60):
        with syncscope.region("step"):
            total = int(x.sum())
        time.sleep(0.01)
    with syncscope.region("final"):
        x.sum().item()  # the last statement: counted only if a scrape comes after it
    """
)

SLICED_PROGRAM = textwrap.dedent(
    """
    import time
    import torch

    x = torch.ones(8, device="cuda")
    deadline = time.monotonic() + 2.5
    steps = 0
    while time.monotonic() < deadline:
        x.sum().item()
        steps += 1
        time.sleep(0.005)
    print("steps", steps)
    """
)


@pytest.mark.parametrize(
    "program, options",
    [(LAST_SYNC_PROGRAM, ["--sample", "1"]), (SLICED_PROGRAM, ["--sample-by", "time", "--sample", "0.5", "--slice-period", "0.2"])],
    ids=["last-statement-sync", "time-sliced"],
)
def test_prometheus_holds_the_last_sync_and_time_slices(prometheus, tmp_path, program, options):
    api_port, metrics_port = prometheus
    (tmp_path / "prog.py").write_text(program)
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    run = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--monitor", *options, "--device", "sim",
         "--metrics-port", str(metrics_port), "--no-table", "-o", "r.json", "prog.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    expected = _report_counts([tmp_path / "r.json"])
    assert expected and all(n > 0 for n in expected.values())
    assert _held_sync_counts(api_port, expected) == expected
    if "time" in options:
        report = json.load(open(tmp_path / "r.json"))
        sampled_s = _query(api_port, "max_over_time(syncscope_sampled_seconds_total[10m])")
        monitored_s = _query(api_port, "max_over_time(syncscope_monitored_seconds_total[10m])")
        fraction = float(sampled_s[0]["value"][1]) / float(monitored_s[0]["value"][1])
        assert 0.35 < fraction < 0.65, fraction  # half of each 0.2 s period, give or take the timer
        # About half of the program's syncs were recorded, not all and not none.
        steps = int(run.stdout.split("steps")[-1])
        assert report["sampling"]["mode"] == "time" and 0.2 < sum(expected.values()) / steps < 0.8
