"""examples/.pre-commit-config.yaml and examples/github-workflow.yml: valid YAML, and every
syncscope command in them names a real subcommand and real options."""

from __future__ import annotations

import os
import re
import shlex

import pytest
import yaml
from typer.testing import CliRunner

from syncscope.cli import app

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def commands(text: str) -> list[list[str]]:
    """`syncscope ...` command lines in shell snippets (continuations joined, `&&` split)."""
    text = text.replace("\\\n", " ")
    found = []
    for line in text.splitlines():
        line = line.split(" # ")[0]
        for part in re.split(r"&&|;|'", line):
            part = part.strip()
            if part.startswith("syncscope "):
                found.append(shlex.split(part.replace('"$GITHUB_STEP_SUMMARY"', "summary.md")))
    return found


def scripts(path: str) -> list[str]:
    data = yaml.safe_load(open(path))
    if "jobs" in data:
        return [step.get("run", "") for job in data["jobs"].values() for step in job["steps"]]
    return [hook.get("entry", "") for repo in data["repos"] for hook in repo["hooks"]]


@pytest.mark.parametrize("name", [".pre-commit-config.yaml", "github-workflow.yml"])
def test_example_commands_exist(name):
    path = os.path.join(EXAMPLES, name)
    found = [cmd for script in scripts(path) for cmd in commands(script)]
    comment_cmds = commands("\n".join(line.lstrip("# ") for line in open(path) if line.lstrip().startswith("#")))
    assert len(found) >= 2
    runner = CliRunner()
    for cmd in found + comment_cmds:
        sub = cmd[1] if cmd[1] != "baseline" else "baseline " + cmd[2]
        help_text = runner.invoke(app, sub.split() + ["--help"], terminal_width=200).output
        assert "usage:" in help_text.lower(), (sub, help_text)  # typer: "Usage:", lint (argparse): "usage:"
        for arg in cmd[2:]:
            if arg.startswith("--"):
                assert arg in help_text, f"{name}: `{' '.join(cmd)}`: {arg} is not an option of syncscope {sub}"


def test_workflow_uploads_sarif_and_gates():
    text = open(os.path.join(EXAMPLES, "github-workflow.yml")).read()
    assert "upload-sarif" in text and "syncscope gate" in text and "--device sim" in text


def test_pre_commit_example_uses_the_published_hook():
    hooks_file = os.path.join(os.path.dirname(EXAMPLES), ".pre-commit-hooks.yaml")
    if not os.path.exists(hooks_file):
        pytest.skip("no .pre-commit-hooks.yaml in this checkout")
    published = {hook["id"] for hook in yaml.safe_load(open(hooks_file))}
    example = yaml.safe_load(open(os.path.join(EXAMPLES, ".pre-commit-config.yaml")))
    remote = [hook["id"] for repo in example["repos"] if repo["repo"] != "local" for hook in repo["hooks"]]
    assert remote and set(remote) <= published
