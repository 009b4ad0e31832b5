"""How much of a lint run's parent process goes to the cyclic garbage collector, by phase.

    python bench/lint_gc_time.py --root /work/corpora/vllm-0.33.0 -- vllm --no-cache

Runs `syncscope lint ARGS` in this process (from `--root`, the project's directory) and prints,
for the parent process only (the pool's workers run with the collector off, pool_worker.py):
its CPU and the collector's thread CPU up to the analysis, while the results arrive, and during
the whole-program pass, with the number of full collections. The lint's own output goes to
/dev/null. For the effect on a whole run, side by side with another revision, use
`bench/lint_bench.py --baseline-rev REV`.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time


class CollectorClock:
    """Thread CPU spent in the collector, and full collections, in this process."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.spent = 0.0
        self.full = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if os.getpid() != self.pid:  # a forked worker inherits the callback
            return
        if phase == "start":
            self._started = time.thread_time()
        else:
            self.spent += time.thread_time() - self._started
            self.full += info["generation"] == 2


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="the directory to run the lint from")
    parser.add_argument("lint_args", nargs="+", help="arguments of `syncscope lint` (after --)")
    args = parser.parse_args(argv)
    os.chdir(args.root)

    clock = CollectorClock()
    gc.callbacks.append(clock)
    marks: list[tuple[str, float, float, int]] = []

    def mark(name: str) -> None:
        marks.append((name, time.process_time(), clock.spent, clock.full))

    import syncscope.lint.analysis_runs as runs
    import syncscope.lint.engine as engine
    from syncscope.commands.lint import main as lint_main

    analyze_all, whole_program = runs.analyze_all, engine._whole_program

    def marked_analysis(*a, **k):
        mark("analysis starts")
        yield from analyze_all(*a, **k)
        mark("results in")

    def marked_pass(*a, **k):
        mark("pass starts")
        try:
            return whole_program(*a, **k)
        finally:
            mark("pass ends")

    runs.analyze_all, engine._whole_program = marked_analysis, marked_pass
    mark("start")
    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        code = lint_main(args.lint_args)
    mark("end")
    print(f"lint exit code {code}")
    print(f"{'from':>16} {'to':>16} {'CPU s':>7} {'in GC s':>8} {'full GCs':>9}")
    for (name, cpu, spent, full), (later, cpu2, spent2, full2) in zip(marks, marks[1:]):
        print(f"{name:>16} {later:>16} {cpu2 - cpu:7.2f} {spent2 - spent:8.2f} {full2 - full:9d}")
    print(f"{'whole run':>33} {marks[-1][1] - marks[0][1]:7.2f} {clock.spent:8.2f} {clock.full:9d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
