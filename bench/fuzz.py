"""The big fuzz run behind docs/reliability.md (tests/test_fuzz_*.py run a bounded version).

    python bench/fuzz.py --inputs 2000            # damaged reports, baselines, lint JSON, configs
    python bench/fuzz.py --programs 500           # the linter on hypothesmith-generated programs
    python bench/fuzz.py --site-packages --jobs 2 # the linter on every .py in site-packages

Prints, per part, the cases tried and the crashes (a broken contract for inputs: a traceback, an
exit code other than 0/1/2, exit 2 without one clear line, a changed input; for the linter: an
internal error on a file, or an exception out of the engine). Exit status 1 when any crashed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

KINDS = ("report", "report_bubbles", "baseline", "lint_json", "lint_baseline", "config")


def fuzz_inputs(cases: int, seed: int) -> tuple[int, int]:
    from tests import fuzz_support as fz

    rng = random.Random(seed)
    crashes = tried = 0
    seen = set()  # one printout per kind of crash
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        seeds = fz.make_seeds(tmp / "seeds")
        runner, app = fz.runner_and_app()
        for i in range(cases):
            kind = KINDS[i % len(KINDS)]
            kinds = fz.JSON_DAMAGE + fz.BUBBLE_DAMAGE if kind == "report_bubbles" else fz.JSON_DAMAGE
            damage = fz.Damage(rng.choice(kinds), rng.randrange(2**32))
            tried += 1
            try:
                fz.outcome_counts(kind, damage, seeds, tmp, runner, app)
            except fz.ContractBroken as exc:
                crashes += 1
                text = str(exc)
                lines = [line for line in text.splitlines() if line.strip().startswith("File") and "syncscope/" in line]
                signature = (text.split(":", 1)[0], text.split(" -> ")[0].split()[1:3].__repr__(), lines[-1] if lines else "")
                if signature not in seen:
                    seen.add(signature)
                    print(f"CRASH {kind} {damage}: {text[:1500]}", file=sys.stderr)
    return tried, crashes


def _lint_one_file(path: str, config) -> list[str]:
    from syncscope.lint.engine import lint_paths

    run = lint_paths([path], config, jobs=1, use_cache=False)
    return list(run.internal_errors)


def fuzz_programs(cases: int, seed: int) -> tuple[int, int]:
    import hypothesmith
    from hypothesis import HealthCheck, given, settings

    from syncscope.lint.config import load_config

    counts = {"tried": 0, "crashes": 0}
    with tempfile.TemporaryDirectory() as tmp:
        configs = [load_config(tmp), load_config(tmp, overrides={"all_functions": True})]
        path = os.path.join(tmp, "generated.py")

        @settings(max_examples=cases, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(source=hypothesmith.from_grammar() | hypothesmith.from_node())
        def run(source):
            counts["tried"] += 1
            with open(path, "w", encoding="utf-8", errors="surrogatepass") as fh:
                fh.write("import torch\n" + source)
            for config in configs:
                try:
                    errors = _lint_one_file(path, config)
                except Exception as exc:  # out of the engine itself
                    errors = [f"{type(exc).__name__}: {exc}"]
                if errors:
                    counts["crashes"] += 1
                    if counts["crashes"] <= 5:
                        print(f"CRASH on generated program:\n{source[:2000]}\n{errors[0][:2000]}", file=sys.stderr)

        run()
    return counts["tried"], counts["crashes"]


def lint_site_packages(jobs: int, roots: list[str]) -> tuple[int, int, float]:
    from syncscope.lint.config import load_config
    from syncscope.lint.engine import lint_paths

    files = sorted(str(p) for root in roots for p in Path(root).rglob("*.py"))
    with tempfile.TemporaryDirectory() as tmp:
        config = load_config(tmp)
        started = time.perf_counter()
        crashes = 0
        # In batches: one lint run holds every file's facts for the whole-program pass.
        for start in range(0, len(files), 2000):
            run = lint_paths(files[start:start + 2000], config, jobs=jobs, use_cache=False)
            for error in run.internal_errors:
                crashes += 1
                if crashes <= 5:
                    print(f"CRASH {error[:2000]}", file=sys.stderr)
        return len(files), crashes, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=0, help="damaged input files to try")
    parser.add_argument("--programs", type=int, default=0, help="generated programs to lint")
    parser.add_argument("--site-packages", action="store_true", help="lint every .py in site-packages")
    parser.add_argument("--root", action="append", default=[], help="lint these trees instead of site-packages")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    crashed = False
    if args.inputs:
        tried, crashes = fuzz_inputs(args.inputs, args.seed)
        print(f"inputs: {tried} damaged files tried, {crashes} crashes")
        crashed |= crashes > 0
    if args.programs:
        tried, crashes = fuzz_programs(args.programs, args.seed)
        print(f"programs: {tried} generated programs linted (default and --all-functions), {crashes} crashes")
        crashed |= crashes > 0
    if args.site_packages or args.root:
        import site

        roots = args.root or [p for p in site.getsitepackages() if os.path.isdir(p)]
        files, crashes, seconds = lint_site_packages(args.jobs, roots)
        print(f"site-packages: {files} .py files linted in {seconds:.0f} s (jobs={args.jobs}), {crashes} crashes ({', '.join(roots)})")
        crashed |= crashes > 0
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
