"""Helpers for the linter tests: lint a source string the way the command line would."""

from __future__ import annotations

import textwrap

from syncscope.lint.config import LintConfig
from syncscope.lint.engine import lint_paths

# SYN302's examples name these as syncing functions.
TEST_SYNCING_FUNCTIONS = ["mylib.sync_all", "Runner.flush"]


def make_config(root, **overrides) -> LintConfig:
    overrides.setdefault("syncing_functions", list(TEST_SYNCING_FUNCTIONS))
    # the rules' examples are snippets with no per-step root (`forward`, `execute_model`, ...):
    # they test what a rule flags, so cold code is reported too; tests/test_lint_scope.py tests
    # the per-step scope with the default (include_cold=False)
    overrides.setdefault("include_cold", True)
    config = LintConfig(**overrides)
    config.root = str(root)
    return config


def lint_source(tmp_path, source: str, name: str = "example.py", **overrides):
    path = tmp_path / name
    path.write_text(source)
    config = make_config(tmp_path, **overrides)
    return lint_paths([str(path)], config, use_cache=False, jobs=1)


def codes(run) -> list[str]:
    return [f.code for f in run.findings]


def env_module(off: str, on: tuple[str, ...] = ("PKG_OTHER",)) -> str:
    """An `environ.py` whose `envs.<off>` is a switch declared off by default (`EnvBool(False)`),
    and each of `on` one declared on: the shape vLLM's and SGLang's env modules have."""
    declared_on = "\n        ".join(f"{name} = EnvBool(True)" for name in on)
    return f"""
    class EnvBool:
        def __init__(self, default):
            self.default = default

        def get(self):
            return self.default

    class Envs:
        {off} = EnvBool(False)
        {declared_on}

    envs = Envs()
"""


def helper_and_step_package(tmp_path):
    """`pkg/`: a helper module whose function syncs, and a step that calls it and syncs itself
    (SYN201, SYN203 and the call site's SYN601 across modules). Returns the package's path."""
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "helpers.py").write_text("def gather(x):\n    return x.cpu()\n")
    (root / "step.py").write_text(textwrap.dedent("""
        import torch
        from .helpers import gather

        def step(t: torch.Tensor):
            a = gather(t)
            return t.sum().item()
    """))
    return root
