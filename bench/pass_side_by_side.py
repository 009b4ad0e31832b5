"""The whole-program pass alone, two checkouts side by side on the same inputs.

    python bench/pass_side_by_side.py save ROOT PACKAGE INPUTS.pickle
    python bench/pass_side_by_side.py time INPUTS.pickle CHECKOUT_A CHECKOUT_B [--rounds 3]

`save` lints PACKAGE (a directory under ROOT) once with a fresh cache, with this checkout, and
keeps what `wholeprogram.solve` was given: every file's analysis, facts included, and the
linted files' paths and content hashes (the pass reads some texts again, text_scans.py).

`time` runs the pass on those inputs with each checkout (`PYTHONPATH=CHECKOUT`), each in a fresh
process, the checkouts' order alternating round by round. A process solves twice: the first run
answers the text scans, which the second, timed one reads as a warm run reads them from its
cache (a pre-commit run whose edit changed a file's facts). It prints each run's CPU seconds, the
median ratio B / A, and whether B's output equals A's (the four values `solve` returns, compared
with `==`: sets and dicts in any order). Only for changes to the pass: both checkouts must read
the facts the saved analyses hold.
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time


def save(root: str, package: str, out: str) -> None:
    if not os.path.isdir(os.path.join(root, package)):
        sys.exit(f"no directory {package} under {root}")
    from syncscope.lint import engine, wholeprogram

    solve = wholeprogram.solve

    def saving(results, library=None, cold_name=None, texts=None):
        with open(out + ".part", "wb") as handle:  # never a half-written file under `out`
            pickle.dump({"results": results, "sources": texts.sources, "digests": texts.digests}, handle, protocol=5)
        os.replace(out + ".part", out)
        return solve(results, library, cold_name, texts)

    if os.path.exists(out):
        os.remove(out)  # an earlier run's file would say the pass ran

    engine.solve = saving  # the engine calls the name it imported
    with tempfile.TemporaryDirectory() as cache:
        config = os.path.join(cache, "lint.toml")
        with open(config, "w") as handle:
            handle.write(f'[tool.syncscope.lint]\ncache-dir = "{cache}/c"\n')
        os.chdir(root)
        from syncscope.cli import main

        sys.argv = ["syncscope", "lint", package, "--config", config, "--include-cold", "--exit-zero",
                    "--no-progress", "--output-format", "json", "-o", os.devnull]
        try:
            main()
        except SystemExit as done:
            if done.code:
                sys.exit(f"the lint run failed (exit {done.code})")
    if not os.path.exists(out):
        sys.exit(f"the pass never ran: is {package} a package under {root}?")


def one(inputs: str, out: str) -> None:
    """Solve twice on the saved inputs with the checkout on sys.path; print the second run's CPU."""
    import gc

    from syncscope.lint import wholeprogram
    from syncscope.lint.config import LintConfig
    from syncscope.lint.text_scans import TextScans

    with open(inputs, "rb") as handle:
        saved = pickle.load(handle)
    gc.freeze()  # as the engine does before the pass (engine._whole_program)
    config = LintConfig()
    memo = None
    for _ in range(2):
        texts = TextScans(saved["sources"], saved["digests"], memo)
        start = time.process_time()
        solved = wholeprogram.solve(saved["results"], config.library(), config.cold_function, texts)
        seconds = time.process_time() - start
        memo = texts.kept
    with open(out, "wb") as handle:
        pickle.dump(solved, handle, protocol=5)
    print(f"{seconds:.3f}")


def timed(inputs: str, checkouts: list[str], rounds: int) -> None:
    for path in (inputs, *checkouts):
        if not os.path.exists(path):
            sys.exit(f"not found: {path}")
    cpu: dict[str, list[float]] = {c: [] for c in checkouts}
    with tempfile.TemporaryDirectory() as work:
        outputs = {c: os.path.join(work, f"out{i}.pickle") for i, c in enumerate(checkouts)}
        for round_ in range(rounds):
            order = checkouts if round_ % 2 == 0 else checkouts[::-1]
            for checkout in order:
                env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
                done = subprocess.run([sys.executable, os.path.abspath(__file__), "_one", inputs, outputs[checkout]],
                                      env=env, capture_output=True, text=True)
                if done.returncode:
                    sys.exit(f"{checkout}: the pass failed:\n{done.stderr[-2000:]}")
                cpu[checkout].append(float(done.stdout.split()[-1]))
                print(f"round {round_ + 1} {checkout}: {cpu[checkout][-1]:.2f} s CPU", flush=True)
        solved = []
        for checkout in checkouts:
            with open(outputs[checkout], "rb") as handle:
                solved.append(pickle.load(handle))
    a, b = checkouts
    ratios = [y / x for x, y in zip(cpu[a], cpu[b])]
    print(f"median CPU: {statistics.median(cpu[a]):.2f} s ({a}), {statistics.median(cpu[b]):.2f} s ({b}); "
          f"ratio B/A per round {', '.join(f'{r:.3f}' for r in ratios)}, median {statistics.median(ratios):.3f}")
    same = [x == y for x, y in zip(*solved)]
    print("outputs equal" if all(same) else f"OUTPUTS DIFFER (parts equal: {same})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    saving = sub.add_parser("save")
    saving.add_argument("root")
    saving.add_argument("package")
    saving.add_argument("out")
    timing = sub.add_parser("time")
    timing.add_argument("inputs")
    timing.add_argument("checkouts", nargs=2)
    timing.add_argument("--rounds", type=int, default=3)
    single = sub.add_parser("_one")  # one checkout's timed pass, in its own process
    single.add_argument("inputs")
    single.add_argument("out")
    args = parser.parse_args()
    if args.command == "save":
        save(os.path.abspath(args.root), args.package, os.path.abspath(args.out))
    elif args.command == "time":
        timed(os.path.abspath(args.inputs), args.checkouts, args.rounds)
    else:
        one(args.inputs, args.out)


if __name__ == "__main__":
    main()
