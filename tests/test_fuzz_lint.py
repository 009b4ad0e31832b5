"""The linter never crashes: on generated programs (hypothesmith), on pathologically nested
code (libcst's native parser and our recursive walks), and on real third-party code. A crash is
an internal error (SYN003) on a file or an exception out of the engine; `bench/fuzz.py` runs the
same on many more programs and on every .py in site-packages."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings

hypothesmith = pytest.importorskip("hypothesmith")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def lint_errors(path, **overrides):
    from syncscope.lint.config import load_config
    from syncscope.lint.engine import lint_paths

    config = load_config(os.path.dirname(path), overrides=overrides or None)
    run = lint_paths([str(path)], config, jobs=1, use_cache=False)
    return run.internal_errors, run.findings


@settings(max_examples=30, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(source=hypothesmith.from_grammar() | hypothesmith.from_node())
def test_generated_programs_lint_without_crashing(tmp_path_factory, source):
    path = tmp_path_factory.mktemp("gen") / "generated.py"
    path.write_text("import torch\n" + source, encoding="utf-8", errors="surrogatepass")
    for overrides in ({}, {"all_functions": True}):
        errors, _ = lint_errors(path, **overrides)
        assert errors == []


DEEP = {
    "unary": lambda n: "-" * n + "x.item()",
    "binop": lambda n: "+".join(["x.item()"] * n),
    "subscript": lambda n: "x" + "[0]" * n + ".item()",
    "not": lambda n: "not " * n + "x.item()",
}


@pytest.mark.parametrize("shape", sorted(DEEP))
@pytest.mark.parametrize("depth", [1500, 20000])
def test_deeply_nested_code_is_analyzed_or_declined_never_a_crash(tmp_path, shape, depth):
    # Depth 1500 overflowed the analyzer's recursion (an internal error); 20000 segfaulted
    # libcst's native parser under --all-functions. In a subprocess: a segfault would be seen.
    path = tmp_path / "deep.py"
    path.write_text(f"import torch\ndef f(x):\n    return {DEEP[shape](depth)}\n")
    for extra in ([], ["--all-functions"]):
        proc = subprocess.run([sys.executable, "-m", "syncscope", "lint", "--no-cache", "--output-format", "concise", *extra, str(path)],
                              capture_output=True, text=True, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=REPO), timeout=300)
        assert proc.returncode == 1, (extra, proc.returncode, proc.stderr[-2000:])
        assert "SYN003" not in proc.stdout and "internal error" not in proc.stderr
        if depth == 1500:
            assert "SYN201" in proc.stdout  # analyzed: the .item() is found under the nesting
        else:
            assert "SYN002" in proc.stdout  # declined, like a file Python itself cannot parse


def test_a_sample_of_installed_packages_lints_without_crashing():
    import json as json_module
    import typer

    from syncscope.lint.config import load_config
    from syncscope.lint.engine import lint_paths

    roots = [os.path.dirname(json_module.__file__), os.path.dirname(typer.__file__)]
    files = sorted(os.path.join(d, f) for root in roots for d, _, names in os.walk(root) for f in names if f.endswith(".py"))
    assert len(files) > 30
    run = lint_paths(files, load_config(REPO), jobs=1, use_cache=False)
    assert run.internal_errors == []
