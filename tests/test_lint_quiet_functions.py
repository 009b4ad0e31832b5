"""The functions libcst never parses (quiet_functions.py): each form a rule hears of keeps its
function walked, and skipping changes no result, on the rules' own examples and on forms made
to slip past the test."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest

from syncscope.lint import cst_parse, quiet_functions
from syncscope.lint.rules import ALL_RULES
from syncscope.lint.rules.base import Invalid
from syncscope.lint.worker import analyze_bytes

from lint_helpers import make_config

# each is flagged, and each holds exactly one form that the skip must not take for quiet
SLIPPERY = {
    "aliased call": """
        import torch
        from torch import nonzero as nz
        def f(x: torch.Tensor):
            return nz(x)
    """,
    "alias imported in the function": """
        import torch
        def f(x: torch.Tensor):
            from torch import nonzero as nz
            return nz(x)
    """,
    "tensor as a truth value": """
        import torch
        def f(x: torch.Tensor):
            if x:
                return 1
            return 0
    """,
    "comparison of a tensor tested": """
        import torch
        def f(x: torch.Tensor):
            while x > 0:
                x = x - 1
    """,
    "not of a tensor": """
        import torch
        def f(x: torch.Tensor):
            return not x
    """,
    "and of a tensor": """
        import torch
        def f(x: torch.Tensor, y):
            return x and y
    """,
    "a quiet test beside a loud one": """
        import torch
        def f(x: torch.Tensor, y):
            return 1 if y is None or x else 2
    """,
    "comprehension filter": """
        import torch
        def f(x: torch.Tensor, rows):
            return [r for r in rows if x]
    """,
    "assert of a tensor": """
        import torch
        def f(x: torch.Tensor):
            assert x
    """,
    "boolean mask parameter": """
        import torch
        def f(x: torch.Tensor, mask: torch.Tensor):
            return x[mask]
    """,
    "boolean mask in a tuple index": """
        import torch
        def f(x: torch.Tensor, mask: torch.Tensor):
            return x[0, mask]
    """,
    "store of a number": """
        import torch
        def f(buf: torch.Tensor):
            buf[0] = 3
    """,
    "tensor slice bound": """
        import torch
        def f(x: torch.Tensor, n: torch.Tensor):
            return x[:n]
    """,
    "syncing property": """
        def f(common_attn_metadata):
            return common_attn_metadata.seq_lens_cpu
    """,
    "call in a nested function": """
        import torch
        def f(x: torch.Tensor):
            def inner():
                return x.item()
            return inner
    """,
}


def _canonical(value):
    """A result as text that does not depend on set order (a tuple holding None hashes by address)."""
    if isinstance(value, (set, frozenset)):
        return "{" + ",".join(sorted(_canonical(item) for item in value)) + "}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_canonical(k)}:{_canonical(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "(" + ",".join(_canonical(item) for item in value) + ")"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value).__name__ + _canonical([getattr(value, f.name) for f in dataclasses.fields(value)])
    return repr(value)


def _analyze(tmp_path, source: str):
    config = make_config(tmp_path)
    return analyze_bytes(source.encode(), "example", False, config)


def _without_the_skip(monkeypatch, tmp_path, source: str):
    with monkeypatch.context() as patch:
        patch.setattr(quiet_functions, "may_fire", lambda *args: True)
        return _analyze(tmp_path, source)


def _rule_examples():
    for rule in ALL_RULES:
        for index, example in enumerate(rule.VALID + rule.INVALID):
            yield pytest.param(example.code if isinstance(example, Invalid) else example, id=f"{rule.code}-{index}")


@pytest.mark.parametrize("source", list(_rule_examples()) + [
    pytest.param(textwrap.dedent(code), id=name) for name, code in SLIPPERY.items()])
def test_skipping_quiet_functions_changes_no_result(monkeypatch, tmp_path, source):
    assert _canonical(_analyze(tmp_path, source)) == _canonical(_without_the_skip(monkeypatch, tmp_path, source))


@pytest.mark.parametrize("name", list(SLIPPERY))
def test_each_form_a_rule_hears_of_keeps_its_function_walked(tmp_path, name):
    result = _analyze(tmp_path, textwrap.dedent(SLIPPERY[name]))
    assert [f for f in result.findings if f.code.startswith("SYN")], f"{name}: nothing flagged"


def test_a_quiet_function_is_not_parsed_by_libcst(monkeypatch, tmp_path):
    source = textwrap.dedent("""
        import torch
        def quiet(batch: dict, x: torch.Tensor, flag=None) -> Optional[torch.Tensor]:
            if flag is None or "key" in batch:
                return batch["key"][1:, 0]
            return x[..., -1] if not flag is None else None
        def loud(x: torch.Tensor):
            return x.item()
    """)
    parsed = []
    real = cst_parse.parse_module
    monkeypatch.setattr(cst_parse, "parse_module", lambda text: parsed.append(text) or real(text))
    result = _analyze(tmp_path, source)
    assert [text.splitlines()[0] for text in parsed] == ["def loud(x: torch.Tensor):"]
    assert [f.function for f in result.findings] == ["loud"]
