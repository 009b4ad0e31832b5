"""Subset linting (issue 24): `syncscope lint one_file.py` inside a project reports for that
file exactly what a whole-tree run reports for it, so the pre-commit hook, which passes only the
staged files, still sees a sync in a helper of another module."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from syncscope.lint.config import load_config
from syncscope.lint.engine import lint_paths

FILES = {
    "pkg/__init__.py": "",
    "pkg/ops/__init__.py": "",
    "pkg/ops/chunks.py": """
        import torch

        def chunk_lens(cu_seqlens):
            return (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
    """,
    "pkg/model.py": """
        import torch
        from pkg.ops.chunks import chunk_lens

        class Attention(torch.nn.Module):
            def forward(self, x: torch.Tensor, cu_seqlens: torch.Tensor):
                return x.split(chunk_lens(cu_seqlens))
    """,
    "pkg/other.py": """
        import torch

        class Mlp(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                return x.sum().item()
    """,
}


def make_project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.syncscope.lint]\n")
    for name, source in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return load_config(str(tmp_path))


def found(run, path=None):
    return sorted((f.site.path, f.site.line, f.code, f.message) for f in run.findings
                  if path is None or f.site.path == path)


def test_one_file_reports_what_the_whole_tree_reports_for_it(tmp_path):
    config = make_project(tmp_path)
    whole = lint_paths([str(tmp_path)], config, use_cache=False, jobs=1)
    alone = lint_paths([str(tmp_path / "pkg" / "model.py")], config, use_cache=False, jobs=1)
    assert found(alone) == found(whole, "pkg/model.py")
    assert [code for _, _, code, _ in found(alone)] == ["SYN601"]  # the sync is in pkg/ops/chunks.py
    assert alone.files == 1


def test_the_other_files_come_from_the_cache(tmp_path):
    config = make_project(tmp_path)
    lint_paths([str(tmp_path)], config, jobs=1)
    again = lint_paths([str(tmp_path / "pkg" / "model.py")], config, jobs=1)
    assert (again.parsed, again.cached) == (0, len([n for n in FILES if n.endswith(".py")]))
    assert [f.code for f in again.findings] == ["SYN601"]


def test_the_pre_commit_hooks_command_sees_across_files(tmp_path):
    make_project(tmp_path)
    with open(os.path.join(os.path.dirname(__file__), "..", ".pre-commit-hooks.yaml")) as handle:
        entry = next(line.split(":", 1)[1].strip() for line in handle if line.strip().startswith("entry:"))
    assert entry.startswith("syncscope lint")
    command = [sys.executable, "-m", "syncscope"] + entry.split()[1:] + ["--output-format", "concise", "pkg/model.py"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert "pkg/model.py:7" in result.stdout and "SYN601" in result.stdout
    assert "pkg/ops/chunks.py" in result.stdout  # the chain's root, in the other module
