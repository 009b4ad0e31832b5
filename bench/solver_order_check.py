"""Does the whole-program pass's output depend on the order the solver visits functions in?

    python bench/solver_order_check.py ROOT --config CACHE_TOML

Reads every file's analysis (facts included) from the lint cache a whole run of ROOT filled
(`CACHE_TOML` names its `cache-dir`, as in `bench/subset_lint_timing.sh`; run with the same
linter code, since the cache is keyed by it) and runs the pass (`wholeprogram.solve`) on them.
An incremental pass (solve only the edited files again, the other functions' summaries taken
from the last solution, and keep the rest when the edited files' summaries come out as before)
can only give what a fresh run gives when a fresh run's result does not depend on the visit
order. It prints:
  * functions whose summary at the end of a fresh run is not what `Solver.compute` gives from
    the final summaries of the rest (the run did not end on a fixpoint);
  * functions whose `compute` reads another function's summary that does not requeue it
    (not among that function's callers): a change there never reaches them;
  * call cycles across files (where a solution kept from before can hold itself up);
  * files whose functions, solved again alone from empty summaries with every other function's
    summary fixed at the fresh run's, do not give back that run's summaries (no edit at all);
  * the pass's output with the worklist visited in the reverse order, compared with the usual.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import contextmanager

from syncscope.lint import wholeprogram
from syncscope.lint.cache import Cache
from syncscope.lint.config import load_config


def cached_results(root: str, config_file: str):
    config = load_config(root, config_file)
    cache = Cache(config.root, config.cache_dir, config.analysis_key())
    results = {}
    for rel in sorted(cache.entries):
        result = cache.entries[rel][2]
        full = result if result.has_facts else cache.with_facts(rel, result)
        results[rel] = full if full is not None else result
    return config, results


def summary_content(summary) -> tuple:
    return (summary.sync, dict(summary.gsync), summary.ruled, dict(summary.cond), dict(summary.gcond),
            summary.ret, summary.elements)


def run_worklist(solver, pending: list, within=None) -> None:
    """`Solver.run`'s loop over `pending` (popped from the end); callers outside `within` (a
    set, or None for all) are not queued."""
    queued = set(pending)
    rounds, limit = 0, 50 * max(1, len(pending))
    while pending and rounds < limit:
        rounds += 1
        qualname = pending.pop()
        queued.discard(qualname)
        before = _state(solver.summaries[qualname])
        solver.summaries[qualname] = solver.compute(qualname)
        if _state(solver.summaries[qualname]) != before:
            for caller in (*solver.callers.get(qualname, ()), *getattr(solver, "readers", {}).get(qualname, ())):
                if caller not in queued and (within is None or caller in within):
                    queued.add(caller)
                    pending.append(caller)


@contextmanager
def solver_run(order, kept: dict):
    """Solver.run visiting `order(functions)`; the solver is kept in `kept["solver"]`."""
    original = wholeprogram.Solver.run

    def run(self) -> None:
        run_worklist(self, order(list(self.program.functions)))
        kept["solver"] = self

    wholeprogram.Solver.run = run
    try:
        yield
    finally:
        wholeprogram.Solver.run = original


class ReadLog(dict):
    """The summaries table, noting which entries `compute` reads."""

    def __getitem__(self, key):
        self.reads.add(key)
        return dict.__getitem__(self, key)

    def get(self, key, default=None):
        self.reads.add(key)
        return dict.get(self, key, default)


def _state(summary) -> tuple:
    """What the worklist compares (`Summary.key` before session 11, `Summary.state` after)."""
    return summary.state() if hasattr(summary, "state") else summary.key()


def not_fixpoint(solver) -> list[str]:
    return [q for q in solver.program.functions
            if summary_content(solver.compute(q)) != summary_content(solver.summaries[q])]


def untracked_reads(solver) -> dict[str, list[str]]:
    final = solver.summaries
    solver.summaries = log = ReadLog(final)
    missed = {}
    for qualname in solver.program.functions:
        log.reads = set()
        solver.compute(qualname)
        out = [t for t in log.reads if t != qualname and qualname not in solver.callers.get(t, ())
               and qualname not in getattr(solver, "readers", {}).get(t, ())]
        if out:
            missed[qualname] = out
    solver.summaries = final
    return missed


def cycles_across_files(solver) -> list[list[str]]:
    """Strongly connected components (Tarjan, iterative) of the call edges spanning files."""
    edges = {q: [t for _, t, _ in out] for q, out in solver.edges.items()}
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in edges:
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            out = edges.get(node, ())
            if i < len(out):
                work.append((node, i + 1))
                child = out[i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len({solver.program.path_of[q] for q in component}) > 1:
                    found.append(component)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def alone_differs(solver) -> list[tuple[str, list[str]]]:
    by_file: dict[str, list[str]] = {}
    for qualname in solver.program.functions:
        by_file.setdefault(solver.program.path_of[qualname], []).append(qualname)
    final = solver.summaries
    differ = []
    for path, functions in by_file.items():
        solver.summaries = dict(final)
        for qualname in functions:
            solver.summaries[qualname] = wholeprogram.Summary()
        run_worklist(solver, list(functions), set(functions))
        changed = [q for q in functions if summary_content(solver.summaries[q]) != summary_content(final[q])]
        if changed:
            differ.append((path, changed))
    solver.summaries = final
    return differ


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root")
    parser.add_argument("--config", required=True)
    args = parser.parse_args(argv)
    started = time.time()
    config, results = cached_results(args.root, args.config)
    print(f"{len(results)} files from the cache ({time.time() - started:.1f} s)")
    kept: dict = {}
    with solver_run(lambda functions: functions, kept):
        usual = wholeprogram.solve(dict(results), config.library(), config.cold_function)
    solver = kept["solver"]
    stale = not_fixpoint(solver)
    print(f"functions {len(solver.program.functions)}; not on a fixpoint at the end of the run: {len(stale)}")
    for qualname in stale[:5]:
        print("   ", qualname)
    missed = untracked_reads(solver)
    print(f"functions reading a summary that does not requeue them: {len(missed)}")
    for qualname, reads in list(missed.items())[:5]:
        print("   ", qualname, "reads", reads[0])
    cycles = cycles_across_files(solver)
    print(f"call cycles across files: {len(cycles)} ({sum(map(len, cycles))} functions)")
    differ = alone_differs(solver)
    print(f"files solved again alone (no edit) that differ: {len(differ)} ({sum(len(c) for _, c in differ)} functions)")
    for path, changed in differ[:5]:
        print("   ", path, changed[0])
    with solver_run(lambda functions: functions[::-1], kept):
        reversed_order = wholeprogram.solve(dict(results), config.library(), config.cold_function)
    for part, a, b in zip(("call-site findings", "host-fed parameters", "host origins", "per-step scope"),
                          usual, reversed_order):
        print(f"reverse visit order: {part} {'equal' if a == b else 'DIFFERENT'}")
    findings, other = usual[0], reversed_order[0]
    for path in sorted(findings.keys() | other.keys()):
        for finding in findings.get(path, ()):
            if finding not in other.get(path, ()):
                print("   ", path, finding.line, finding.code, finding.message[:120])
    return 0


if __name__ == "__main__":
    sys.exit(main())
