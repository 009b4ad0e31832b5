"""Benchmark `syncscope lint` on real code no one here wrote: vLLM's Python source.

    python bench/lint_bench.py                       # download (once) and run everything
    python bench/lint_bench.py --src /tmp/vllm_src --baseline-rev d75d2a4 --skip-torchfix

What it measures, each as a fresh `python -m syncscope lint` process (wall and CPU seconds of
the process and its workers; on a shared machine the CPU figure is the stable one):
  * cold `vllm/v1` and the whole `vllm/` tree: no cache (the run writes one), all cores;
  * warm: the same command again, nothing changed;
  * one file edited in a 1,718-file tree (`vllm/v1`, `model_executor`, `distributed`,
    `entrypoints`): a comment appended to one file between warm runs;
  * peak memory of the cold whole-tree run: the sum of the proportional set sizes (PSS: shared
    pages split between the processes sharing them) of the lint process and its workers,
    sampled every 20 ms;
  * with `--baseline-rev REV`: the same cold runs with the linter as it was at that commit
    (`git archive` of its `syncscope/`), interleaved with the current one in the same run, and
    the ratio; and the findings per rule of both.
  * TorchFix (`torchfix vllm/v1`, in its own virtual environment because it pins another
    libcst) in the same run, and the ratio.
Results go to stdout and, with --json, to a file.

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
import tempfile
import threading
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


def timed(cmd: list[str], cwd: str, env: dict | None = None, sample_memory: bool = False):
    """(wall seconds, CPU seconds of the process and its workers, peak summed PSS in MB or None,
    result)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    done = threading.Event()
    if sample_memory:
        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], tree_rss(proc.pid))
                time.sleep(0.02)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - started
    done.set()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    return wall, cpu, (round(peak[0] / 2**20) if sample_memory else None), result


def tree_rss(pid: int) -> int:
    """Memory of a process and all its descendants (Linux /proc), in bytes: the sum of their
    proportional set sizes, so pages the forked workers share with the parent count once."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            with open(f"/proc/{current}/smaps_rollup") as handle:
                for line in handle:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    todo.extend(int(child) for child in handle.read().split())
        except (OSError, ValueError):
            continue
    return total


EDIT_TREE = ["vllm/v1", "vllm/model_executor", "vllm/distributed", "vllm/entrypoints"]
EDITED_FILE = "vllm/v1/worker/gpu_input_batch.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", default=os.path.join(REPO, ".bench"), help="download/unpack/venv directory")
    parser.add_argument("--src", help="an already unpacked tree holding vllm/ (skips the download)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median reported)")
    parser.add_argument("--baseline-rev", help="a git revision of this repository to compare with (cold runs, findings)")
    parser.add_argument("--skip-torchfix", action="store_true")
    parser.add_argument("--torchfix", help="an installed torchfix executable (skips making the venv)")
    parser.add_argument("--skip-whole-tree", action="store_true")
    parser.add_argument("--skip-v1", action="store_true", help="skip the vllm/v1 runs (whole tree only)")
    parser.add_argument("--skip-edit", action="store_true", help="skip the runs that edit a file of the tree (one-file-edited, subset)")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    src = args.src or fetch_vllm(args.cache)
    work = tempfile.mkdtemp(prefix="lint-bench-")
    # the lint cache goes where the bench can clear it, for both linters alike
    config = os.path.join(work, "bench.toml")
    with open(config, "w") as handle:
        handle.write(f'[tool.syncscope.lint]\ncache-dir = "{os.path.join(work, "cache")}"\n')
    linters = {"current": REPO}
    if args.baseline_rev:
        linters["baseline"] = unpack_revision(args.baseline_rev, os.path.join(work, "baseline"))
    results: dict = {"vllm_version": VLLM_VERSION, "cpus": os.cpu_count(), "python": sys.version.split()[0],
                     "baseline_rev": args.baseline_rev}

    def run(linter: str, targets: list[str], memory: bool = False):
        env = dict(os.environ, PYTHONPATH=linters[linter] + os.pathsep + os.environ.get("PYTHONPATH", ""))
        cmd = [sys.executable, "-m", "syncscope", "lint", "--no-progress", "--config", config,
               *targets, "--output-format", "json", "--exit-zero"]
        wall, cpu, peak, proc = timed(cmd, src, env, memory)
        if proc.returncode != 0:
            raise SystemExit(f"{linter} lint failed on {targets}: {proc.stderr[-2000:]}")
        return wall, cpu, peak, proc

    def clear_cache():
        shutil.rmtree(os.path.join(work, "cache"), ignore_errors=True)

    def cold_and_warm(target: str) -> dict:
        out: dict = {"files": 0, "lines": 0}
        for root, _, names in os.walk(os.path.join(src, target)):
            for name in names:
                if name.endswith(".py"):
                    out["files"] += 1
                    with open(os.path.join(root, name), "rb") as handle:
                        out["lines"] += handle.read().count(b"\n")
        samples: dict = {name: {"cold": [], "cold_cpu": [], "warm": [], "warm_cpu": [], "peak_mb": []} for name in linters}
        last = {}
        for _ in range(args.repeat):
            for name in linters:  # interleaved, so both see the same machine load
                clear_cache()
                wall, cpu, peak, proc = run(name, [target], memory=True)
                samples[name]["cold"].append(wall)
                samples[name]["cold_cpu"].append(cpu)
                samples[name]["peak_mb"].append(peak)
                last[name] = proc
                wall, cpu, _, _ = run(name, [target])
                samples[name]["warm"].append(wall)
                samples[name]["warm_cpu"].append(cpu)
        for name, s in samples.items():
            findings = json.loads(last[name].stdout)
            out[name] = {
                "cold_s": round(statistics.median(s["cold"]), 2), "cold_runs": [round(x, 2) for x in s["cold"]],
                "cold_cpu_s": round(statistics.median(s["cold_cpu"]), 2),
                "warm_s": round(statistics.median(s["warm"]), 3), "warm_runs": [round(x, 3) for x in s["warm"]],
                "warm_cpu_s": round(statistics.median(s["warm_cpu"]), 3),
                "peak_pss_mb": max(s["peak_mb"]),
                "findings": len(findings),
                "per_rule": dict(sorted(Counter(f["code"] for f in findings).items())),
            }
        if "baseline" in linters:
            ratios = [c / b for c, b in zip(samples["current"]["cold"], samples["baseline"]["cold"])]
            cpu_ratios = [c / b for c, b in zip(samples["current"]["cold_cpu"], samples["baseline"]["cold_cpu"])]
            out["cold_ratio_current_over_baseline"] = round(statistics.median(ratios), 3)
            out["cold_cpu_ratio_current_over_baseline"] = round(statistics.median(cpu_ratios), 3)
        return out

    if not args.skip_v1:
        results["vllm/v1"] = cold_and_warm("vllm/v1")
        print(json.dumps({"vllm/v1": results["vllm/v1"]}, indent=2), flush=True)
    if not args.skip_whole_tree:
        results["vllm"] = cold_and_warm("vllm")
        print(json.dumps({"vllm": results["vllm"]}, indent=2), flush=True)

    # one file edited in a 1,718-file tree: per-file facts come from the cache, the edited
    # file is analyzed again and the whole-program pass reruns
    if not args.skip_edit:
        clear_cache()
        run("current", EDIT_TREE)
        edited = os.path.join(src, EDITED_FILE)
        with open(edited, "rb") as handle:
            original = handle.read()
        edits, edit_cpu = [], []
        try:
            for i in range(max(3, args.repeat)):
                with open(edited, "wb") as handle:
                    handle.write(original + f"\n# bench edit {i}\n".encode())
                wall, cpu, _, _ = run("current", EDIT_TREE)
                edits.append(wall)
                edit_cpu.append(cpu)
        finally:
            with open(edited, "wb") as handle:
                handle.write(original)
        files = sum(1 for t in EDIT_TREE for _, _, fs in os.walk(os.path.join(src, t)) for f in fs if f.endswith(".py"))
        results["one_file_edited"] = {"tree_files": files, "edited": EDITED_FILE, "wall_s": round(statistics.median(edits), 2),
                                      "runs": [round(x, 2) for x in edits], "cpu_s": round(statistics.median(edit_cpu), 2)}
        print(json.dumps({"one_file_edited": results["one_file_edited"]}, indent=2), flush=True)

    # subset lint, as the pre-commit hook runs it: one staged file of vllm/, its facts from a warm
    # whole-tree cache (the other 3,230 files' facts from the cache, the whole-program pass
    # reused when nothing changed, rerun after an edit). It edits a file of the tree too, so
    # --skip-edit skips it (a read-only --src, such as an unpacked corpus, then works)
    if not args.skip_whole_tree and not args.skip_edit:
        clear_cache()
        run("current", ["vllm"])
        staged = os.path.join("vllm", EDITED_FILE.split("/", 1)[1]) if EDITED_FILE.startswith("vllm/") else EDITED_FILE
        unchanged, changed = [], []
        with open(os.path.join(src, staged), "rb") as handle:
            original = handle.read()
        try:
            for i in range(max(3, args.repeat)):
                wall, _, _, _ = run("current", [staged])
                unchanged.append(wall)
                with open(os.path.join(src, staged), "wb") as handle:
                    handle.write(original + f"\n# staged edit {i}\n".encode())
                wall, _, _, _ = run("current", [staged])
                changed.append(wall)
                with open(os.path.join(src, staged), "wb") as handle:
                    handle.write(original)
                run("current", [staged])  # back to the cached state
        finally:
            with open(os.path.join(src, staged), "wb") as handle:
                handle.write(original)
        results["subset_one_file"] = {"file": staged, "warm_unchanged_s": round(statistics.median(unchanged), 2),
                                      "unchanged_runs": [round(x, 2) for x in unchanged],
                                      "warm_edited_s": round(statistics.median(changed), 2),
                                      "edited_runs": [round(x, 2) for x in changed]}
        print(json.dumps({"subset_one_file": results["subset_one_file"]}, indent=2), flush=True)

    if not args.skip_torchfix:
        cmd = [args.torchfix] if args.torchfix else torchfix_command(args.cache)
        seconds, cpu, _, proc = timed(cmd + ["vllm/v1"], src)
        results["torchfix_vllm_v1_s"] = round(seconds, 2)
        results["torchfix_vllm_v1_cpu_s"] = round(cpu, 2)
        results["torchfix_cpu_over_syncscope_cold_cpu"] = round(cpu / results["vllm/v1"]["current"]["cold_cpu_s"], 1)
        output = proc.stdout + proc.stderr
        results["torchfix_findings"] = sum(1 for line in output.splitlines() if ": TOR" in line)
        results["torchfix_exit_code"] = proc.returncode
        results["torchfix_over_syncscope_cold"] = round(seconds / results["vllm/v1"]["current"]["cold_s"], 1)
        print(json.dumps({k: v for k, v in results.items() if k.startswith("torchfix")}, indent=2))
    return _finish(results, work, args)


def _finish(results: dict, work: str, args) -> int:
    load = os.getloadavg()
    results["load_average_at_end"] = [round(x, 2) for x in load]
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json + ".tmp", "w") as handle:
            json.dump(results, handle, indent=2)
        os.replace(args.json + ".tmp", args.json)
    return 0


def unpack_revision(rev: str, into: str) -> str:
    """The `syncscope/` package as it was at `rev`, unpacked into `into` (a PYTHONPATH entry)."""
    os.makedirs(into)
    archive = subprocess.run(["git", "-C", REPO, "archive", rev, "syncscope"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
    return into


if __name__ == "__main__":
    sys.exit(main())
