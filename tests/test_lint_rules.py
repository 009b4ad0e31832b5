"""Every rule's VALID and INVALID examples, run through the real engine; fixes where a rule
offers one; and the rule pages under rules/ match the rule classes one to one."""

from __future__ import annotations

import os
import re

import pytest

from syncscope.lint.rules import ALL_RULES, RULES_BY_CODE
from syncscope.lint.rules.base import Invalid
from syncscope.lint.worker import analyze_bytes

from lint_helpers import codes, lint_source, make_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _examples(kind: str):
    for rule in ALL_RULES:
        for index, example in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, example, id=f"{rule.code}-{kind.lower()}-{index}")


@pytest.mark.parametrize("rule, example", list(_examples("INVALID")))
def test_invalid_example_is_flagged(tmp_path, rule, example):
    source = example.code if isinstance(example, Invalid) else example
    run = lint_source(tmp_path, source)
    assert rule.code in codes(run), f"{rule.code} did not flag:\n{source}\ngot {codes(run)}"


@pytest.mark.parametrize("rule, example", list(_examples("VALID")))
def test_valid_example_is_not_flagged(tmp_path, rule, example):
    run = lint_source(tmp_path, example)
    assert rule.code not in codes(run), f"{rule.code} flagged valid code:\n{example}\n{run.findings}"


def test_every_rule_has_examples_and_metadata():
    assert len(RULES_BY_CODE) == len(ALL_RULES), "duplicate rule code"
    for rule in ALL_RULES:
        assert re.fullmatch(r"[A-Z]{1,3}[0-9]{0,3}", rule.code), rule.code  # flake8-compatible
        assert rule.code.startswith("SYN") and rule.code[3] in "123456"
        assert rule.VALID and rule.INVALID, f"{rule.code} needs VALID and INVALID examples"
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name), rule.name
        assert rule.summary and rule.__doc__


def _fix_examples():
    for rule in ALL_RULES:
        for index, example in enumerate(rule.INVALID):
            if isinstance(example, Invalid) and example.fixed is not None:
                yield pytest.param(rule, example, id=f"{rule.code}-fix-{index}")


@pytest.mark.parametrize("rule, example", list(_fix_examples()))
def test_fix_produces_expected_source(tmp_path, rule, example):
    from syncscope.lint.fixes import fix_file

    path = tmp_path / "example.py"
    path.write_text(example.code)
    config = make_config(tmp_path)
    run = lint_source(tmp_path, example.code)
    wanted = {(f.code, f.site.line) for f in run.findings if f.code == rule.code and f.fix}
    assert wanted, f"{rule.code} finding carries no fix"
    fixed = fix_file(str(path), "example.py", wanted, config, unsafe=True)
    assert fixed is not None
    assert fixed[1] == example.fixed


def test_fix_safety_follows_proof(tmp_path):
    """A twin that the function itself copied is a safe fix; one known only by name is unsafe."""
    proven = "import torch\ndef f(x: torch.Tensor, m_cpu: torch.Tensor):\n    m = m_cpu.cuda()\n    return x[m > 0], m.tolist()\n"
    named = "import torch\ndef f(x: torch.Tensor, m: torch.Tensor, m_cpu: torch.Tensor):\n    return m.tolist()\n"
    assert [f.fix for f in lint_source(tmp_path, proven).findings if f.code == "SYN202"] == ["safe"]
    assert [f.fix for f in lint_source(tmp_path, named).findings if f.code == "SYN202"] == ["unsafe"]


def _all_example_sources():
    for rule in ALL_RULES:
        for example in list(rule.VALID) + list(rule.INVALID):
            yield pytest.param(example.code if isinstance(example, Invalid) else example, id=rule.code)


@pytest.mark.parametrize("source", list(_all_example_sources()))
def test_function_mode_matches_whole_module_mode(source):
    """The fast path (ast picks hot functions, libcst parses each alone) finds exactly what the
    whole-module walk (used by --fix) finds, on the same lines."""
    config = make_config(".")
    fast = analyze_bytes(source.encode(), "example", False, config)
    whole, _ = analyze_bytes(source.encode(), "example", False, config, keep_tree=True)
    assert sorted(f[:3] for f in fast.findings) == sorted(f[:3] for f in whole.findings)


SECTIONS = ["## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"]


def test_every_rule_has_a_page_and_every_page_a_rule():
    pages = {name[:-3] for name in os.listdir(os.path.join(ROOT, "rules")) if re.fullmatch(r"SYN\d{3}\.md", name)}
    assert pages == set(RULES_BY_CODE), f"pages without rules: {pages - set(RULES_BY_CODE)}; rules without pages: {set(RULES_BY_CODE) - pages}"
    for code in pages:
        with open(os.path.join(ROOT, "rules", f"{code}.md"), encoding="utf-8") as handle:
            text = handle.read()
        rule = RULES_BY_CODE[code]
        assert text.startswith(f"# {code} {rule.name}"), f"{code}.md title must be '# {code} {rule.name}'"
        positions = [text.find(section) for section in SECTIONS]
        assert all(p >= 0 for p in positions), f"{code}.md lacks one of {SECTIONS}"
        assert positions == sorted(positions), f"{code}.md sections out of order"
        assert "```python" in text


def _page_blocks(code: str) -> tuple[str, str]:
    with open(os.path.join(ROOT, "rules", f"{code}.md"), encoding="utf-8") as handle:
        text = handle.read()
    example = text.split("## Example", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    instead = text.split("## Use instead", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    return example, instead


@pytest.mark.parametrize("code", sorted(c for c in RULES_BY_CODE if c != "SYN302"))
def test_page_examples_behave_as_documented(tmp_path, code):
    example, instead = _page_blocks(code)
    assert code in codes(lint_source(tmp_path, example, "example.py"))
    assert code not in codes(lint_source(tmp_path, instead, "instead.py"))


def test_catalog_matches_rule_classes():
    """Reports read rule names from the catalog (no libcst import on a cached run)."""
    from syncscope.lint.catalog import CATALOG

    assert CATALOG == {r.code: (r.name, r.summary, r.level) for r in ALL_RULES}


def test_configured_owner_patterns_match_alike(tmp_path):
    """`name.attr` (SYN301) and `name.method` (SYN302) patterns match the receiver's text or its
    last part, by the one helper (rules/_common.owner_matches)."""
    source = ("def step(self):\n    self.runner.flush()\n    return self.common_attn_metadata.seq_lens_cpu\n")
    found = codes(lint_source(tmp_path, source, syncing_functions=["runner.flush"]))
    assert sorted(found) == ["SYN301", "SYN302"]
