"""How much of the linter's libcst work is in functions the per-step table holds.

    python bench/per_step_share.py /work/corpora/vllm-0.33.0 vllm

Lints the package whole (no cache, two jobs), keeps the whole-program pass's per-step table
(`scope["functions"]`: per-step and per-request functions), then lists the functions the
worker parses with libcst and walks with the rules (worker.py `_by_function`'s choice: hot, not
a cold private helper, its text naming something a rule looks for) and counts how many of them,
and of their lines, the table holds. The answer bounds what a libcst walk of only the per-step
functions could save (docs/lint.md, session 30).
"""

from __future__ import annotations

import ast
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from syncscope.lint import engine, worker  # noqa: E402
from syncscope.lint.callgraph import cold_private_helpers  # noqa: E402
from syncscope.lint.config import load_config  # noqa: E402
from syncscope.lint.files import function_trigger  # noqa: E402


def walked_functions(text: str, module: str, config, trigger):
    """(qualified name, lines) of each function `_by_function` would parse with libcst."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    units = list(worker._functions(tree.body, [], config))
    graph: dict = {}
    for fn, _, cold, _ in units:
        segment = lines[fn.lineno - 1: fn.end_lineno]
        calls = worker._called_names("".join(segment[1:]) if len(segment) > 1 else segment[0].split(":", 1)[-1])
        was_cold, known = graph.get(fn.name, (True, frozenset()))
        graph[fn.name] = (was_cold and cold, known | calls)
    helpers = cold_private_helpers(graph)
    for fn, classes, cold, memo in units:
        if (cold and not memo) or fn.name in helpers:
            continue
        first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
        if trigger.search("".join(lines[first - 1: fn.end_lineno])):
            yield ".".join([module, *classes, fn.name]), fn.end_lineno - first + 1


def main() -> int:
    root, package = sys.argv[1], sys.argv[2]
    kept: dict = {}
    solve = engine.solve

    def keep(results, *args, **kwargs):
        solved = solve(results, *args, **kwargs)
        kept["modules"] = {path: result.module for path, result in results.items()}
        kept["table"] = solved[3]["functions"] or {}
        return solved

    engine.solve = keep
    os.chdir(root)
    config = load_config(root)
    started = time.time()
    run = engine.lint_paths([package], config, jobs=2, use_cache=False)
    print(f"lint: {time.time() - started:.0f} s, {len(run.findings)} findings; per-step table: {len(kept['table'])} functions")
    trigger = function_trigger(config)
    walked = [0, 0]
    per_step = [0, 0]
    for path, module in kept["modules"].items():
        if module is None:
            continue
        try:
            with open(path, encoding="utf-8") as handle:
                found = list(walked_functions(handle.read(), module, config, trigger))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        for qualname, count in found:
            walked[0] += 1
            walked[1] += count
            if qualname in kept["table"]:
                per_step[0] += 1
                per_step[1] += count
    print(f"walked by libcst: {walked[0]} functions, {walked[1]} lines; in the per-step table: "
          f"{per_step[0]} ({per_step[0] / walked[0]:.1%}), {per_step[1]} lines ({per_step[1] / walked[1]:.1%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
