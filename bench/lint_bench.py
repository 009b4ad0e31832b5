"""Benchmark `syncscope lint` on real code no one here wrote: vLLM's Python source.

    python bench/lint_bench.py                 # download (once) and run everything
    python bench/lint_bench.py --src /tmp/vllm_src --skip-torchfix

What it measures, each as the wall time of a fresh `python -m syncscope lint` process:
  * cold `vllm/v1`: no cache (the run writes one), all cores;
  * warm `vllm/v1`: the same command again, nothing changed;
  * cold and warm for the whole `vllm/` tree;
  * TorchFix (`torchfix vllm/v1`, in its own virtual environment because it pins another
    libcst) in the same run, and the ratio.
It also prints the findings per rule for both trees. Results go to stdout and, with --json,
to a file.

The vLLM wheel (pinned below, ~336 MB) is downloaded with pip into the cache directory
(default `.bench/` in the repository, which git ignores) and only its `vllm/**/*.py` files are
unpacked. Nothing is installed into the current environment.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from collections import Counter

VLLM_VERSION = "0.33.0"
TORCHFIX_VERSION = "0.7.0"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fetch_vllm(cache: str) -> str:
    """Unpacked vLLM source tree (the directory holding `vllm/`), downloading if needed."""
    src = os.path.join(cache, f"vllm-{VLLM_VERSION}-src")
    if os.path.isdir(os.path.join(src, "vllm")):
        return src
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    found = [f for f in os.listdir(wheels) if f.startswith(f"vllm-{VLLM_VERSION}-") and f.endswith(".whl")]
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                        f"vllm=={VLLM_VERSION}", "-d", wheels], check=True)
        found = [f for f in os.listdir(wheels) if f.startswith(f"vllm-{VLLM_VERSION}-") and f.endswith(".whl")]
    tmp = src + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(os.path.join(wheels, found[0])) as wheel:
        for name in wheel.namelist():
            if name.startswith("vllm/") and name.endswith(".py"):
                wheel.extract(name, tmp)
    os.replace(tmp, src)
    return src


def torchfix_command(cache: str) -> list[str]:
    venv = os.path.join(cache, f"torchfix-{TORCHFIX_VERSION}-venv")
    exe = os.path.join(venv, "bin", "torchfix")
    if not os.path.exists(exe):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", f"torchfix=={TORCHFIX_VERSION}"], check=True)
    return [exe]


def timed(cmd: list[str], cwd: str, env: dict | None = None) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the process and its workers, result). The CPU time is the
    figure to compare when the machine is shared: wall time stretches with other load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def lint_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "syncscope", "lint", "--no-progress", *args]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", default=os.path.join(REPO, ".bench"), help="download/unpack/venv directory")
    parser.add_argument("--src", help="an already unpacked tree holding vllm/ (skips the download)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median reported)")
    parser.add_argument("--skip-torchfix", action="store_true")
    parser.add_argument("--torchfix", help="an installed torchfix executable (skips making the venv)")
    parser.add_argument("--skip-whole-tree", action="store_true")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    src = args.src or fetch_vllm(args.cache)
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cache_dir = os.path.join(src, ".syncscope_cache")
    results: dict = {"vllm_version": VLLM_VERSION, "cpus": os.cpu_count(), "python": sys.version.split()[0]}

    def cold_and_warm(target: str) -> dict:
        colds, warms, cold_cpu, warm_cpu = [], [], [], []
        out = None
        for _ in range(args.repeat):
            shutil.rmtree(cache_dir, ignore_errors=True)
            seconds, cpu, proc = timed(lint_cmd(target, "--output-format", "json", "--exit-zero"), src, env)
            colds.append(seconds)
            cold_cpu.append(cpu)
            out = proc
            seconds, cpu, _ = timed(lint_cmd(target, "--output-format", "json", "--exit-zero"), src, env)
            warms.append(seconds)
            warm_cpu.append(cpu)
        if out.returncode != 0:
            raise SystemExit(f"lint failed on {target}: {out.stderr[-2000:]}")
        findings = json.loads(out.stdout)
        files = sum(1 for _, _, fs in os.walk(os.path.join(src, target)) for f in fs if f.endswith(".py"))
        lines = 0
        for root, _, fs in os.walk(os.path.join(src, target)):
            for f in fs:
                if f.endswith(".py"):
                    with open(os.path.join(root, f), "rb") as handle:
                        lines += handle.read().count(b"\n")
        return {
            "files": files, "lines": lines,
            "cold_s": round(statistics.median(colds), 2), "cold_runs": [round(x, 2) for x in colds],
            "warm_s": round(statistics.median(warms), 3), "warm_runs": [round(x, 3) for x in warms],
            "cold_cpu_s": round(statistics.median(cold_cpu), 2), "warm_cpu_s": round(statistics.median(warm_cpu), 3),
            "findings": len(findings),
            "per_rule": dict(sorted(Counter(f["code"] for f in findings).items())),
        }

    results["vllm/v1"] = cold_and_warm("vllm/v1")
    print(json.dumps({"vllm/v1": results["vllm/v1"]}, indent=2), flush=True)
    if not args.skip_whole_tree:
        results["vllm"] = cold_and_warm("vllm")
        print(json.dumps({"vllm": results["vllm"]}, indent=2), flush=True)
    if not args.skip_torchfix:
        cmd = [args.torchfix] if args.torchfix else torchfix_command(args.cache)
        seconds, cpu, proc = timed(cmd + ["vllm/v1"], src)
        results["torchfix_vllm_v1_s"] = round(seconds, 2)
        results["torchfix_vllm_v1_cpu_s"] = round(cpu, 2)
        results["torchfix_cpu_over_syncscope_cold_cpu"] = round(cpu / results["vllm/v1"]["cold_cpu_s"], 1)
        output = proc.stdout + proc.stderr
        results["torchfix_findings"] = sum(1 for line in output.splitlines() if ": TOR" in line)
        results["torchfix_exit_code"] = proc.returncode
        results["torchfix_over_syncscope_cold"] = round(seconds / results["vllm/v1"]["cold_s"], 1)
        print(json.dumps({k: v for k, v in results.items() if k.startswith("torchfix")}, indent=2))
    load = os.getloadavg()
    results["load_average_at_end"] = [round(x, 2) for x in load]
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    shutil.rmtree(cache_dir, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
