"""Session 12, cost (issue 24): what the whole-program pass read again from every file's text is
a per-file fact of the analysis (name_uses.py), and three per-file walks are cheaper; the
reports must not change.

1. `name_uses`: what each file's code does with each capitalized name, which
   platform_built.built_elsewhere reads instead of parsing the files that name a candidate.
2. The same answers when a file has no fact (read again) and in a subset lint from the cache.
3. flagguards' stores, sequence_names' container-only names, optin's gated calls: the same
   records by the cheaper walks.
"""

from __future__ import annotations

import ast
import textwrap

import libcst as cst

from lint_helpers import make_config
from syncscope.lint import optin, platform_built, worker
from syncscope.lint.engine import lint_paths
from syncscope.lint.flagguards import file_flags
from syncscope.lint.name_uses import each_use, name_uses
from syncscope.lint.sequence_names import container_names
from test_lint_guards import lines
from test_lint_nonsync_s11 import NONZERO_LINE, built
from test_lint_scope import lint_package

# -- 1. the fact ------------------------------------------------------------------------------

MENTIONS = '''
from pkg.prepare import Imported, Other as Renamed
__all__ = ["Listed"]
REGISTRY = {"a": Kept}

class Sub(Base):
    pass

def f(x: Annot, y: "Quoted") -> Ret:
    if isinstance(x, Tested):
        pass
    built = Built(1)
    alt = Alt.from_config(2)
    path = "pkg.mod.Pathed"
    again = Built(3)
    # Commented() is no code
    return Value
'''


def test_name_uses_keeps_the_failing_and_the_built_names_only():
    text = textwrap.dedent(MENTIONS)
    uses = dict(each_use(name_uses(ast.parse(text), text)))
    failing = {"Base", "Kept", "Other", "Pathed", "Value", "REGISTRY"}  # REGISTRY: a store
    assert {name for name, lines in uses.items() if lines is None} == failing
    assert {name: lines for name, lines in uses.items() if lines is not None} == {"Alt": [13], "Built": [12, 15]}
    # quiet mentions (imports, `__all__`, annotations, type tests) and comments are not kept
    assert not uses.keys() & {"Imported", "Listed", "Annot", "Quoted", "Ret", "Tested", "Commented"}


def test_a_file_of_another_encoding_has_no_fact():
    text = "# -*- coding: latin-1 -*-\nx = 'é'\nC()\n"
    assert name_uses(ast.parse(text), text) is None
    utf8 = "# -*- coding: utf-8 -*-\nx = 'é'\nC()\n"
    assert dict(each_use(name_uses(ast.parse(utf8), utf8))) == {"C": [3]}


# -- 2. the pass reads the facts ----------------------------------------------------------------

def test_the_pass_parses_no_file_to_find_a_class_built_only_elsewhere(tmp_path, monkeypatch):
    def parse_again(*args):
        raise AssertionError("the pass parsed a file that has its fact")

    monkeypatch.setattr(platform_built, "uses_in", parse_again)
    run = lint_package(tmp_path, built())
    assert NONZERO_LINE not in lines(run, "pkg/prepare.py")


def test_a_file_without_the_fact_is_parsed_again_with_the_same_answer(tmp_path, monkeypatch):
    monkeypatch.setattr("syncscope.lint.name_uses.name_uses", lambda tree, text: None)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert NONZERO_LINE not in lines(lint_package(tmp_path / "a", built()), "pkg/prepare.py")
    registry = built('\n    REGISTRY = {"batched": BatchedPF}\n')
    assert NONZERO_LINE in lines(lint_package(tmp_path / "b", registry), "pkg/prepare.py")


def _write(root, files: dict[str, str]) -> None:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("")
    for name, source in files.items():
        (root / "pkg" / name).write_text(textwrap.dedent(source))


def test_a_subset_lint_reads_the_other_files_facts_from_the_cache(tmp_path):
    config = make_config(tmp_path, include_cold=False)
    _write(tmp_path, built())
    lint_paths([str(tmp_path / "pkg")], config, jobs=1)
    alone = lint_paths([str(tmp_path / "pkg" / "prepare.py")], config, jobs=1)
    assert alone.parsed == 0 and NONZERO_LINE not in lines(alone, "pkg/prepare.py")
    # another file now keeps the class in a registry: only that file is analyzed again
    _write(tmp_path, built('\n    REGISTRY = {"batched": BatchedPF}\n'))
    again = lint_paths([str(tmp_path / "pkg" / "prepare.py")], config, jobs=1)
    assert NONZERO_LINE in lines(again, "pkg/prepare.py")


# -- 3. the cheaper walks give the same records --------------------------------------------------

FLAGS = '''
def f(x, out=None, check=False, *, extra=None):
    if out is None:
        out = x + 1
    if out is not None:
        use(out)
    if extra is not None:
        use(extra)
    def inner(y, quiet=None):
        if quiet is not None:
            use(quiet)
    [extra for extra in x]
    if check:
        g(x, check=check, out=None)
'''


def test_a_flag_parameter_the_function_stores_into_is_no_flag_guard():
    guards, passes = file_flags(ast.parse(textwrap.dedent(FLAGS)), "m")
    # `out` is stored into; `extra` is bound by a comprehension (a store too, as `ast.walk` saw it)
    assert guards == {"m.f": [(14, 14, "check", 2, False)], "m.f.inner": [(11, 11, "quiet", 1, True)]}
    assert passes == {(6, 9): (False, {0: ("fwd", "out", False)}, False),
                      (8, 9): (False, {0: ("fwd", "extra", False)}, False),
                      (11, 13): (False, {0: ("fwd", "quiet", True)}, False),
                      (14, 9): (False, {"check": ("fwd", "check", False), "out": "none"}, False)}


CONTAINERS = '''
def f(xs, ys):
    parts = [x for x in xs]
    parts += [1]
    pairs = {}
    both = list(xs) if xs else []
    mixed = []
    mixed = xs
    shadowed = []
    glob = []
    def inner():
        nested = []
        global glob
        return nested
    lam = lambda: (hidden := [])
    for item in ys:
        pass
    with open(xs) as handle:
        pass
    (a, b) = [], []
    if (walrus := [1]):
        pass
    return parts
'''


def test_container_names_by_the_plain_walk():
    function = cst.parse_module(textwrap.dedent(CONTAINERS)).body[0]
    names = container_names(function, ["xs", "ys"], lambda name: False)
    # `(a, b) = [], []` binds each name to its own list (the parallel-assignment rule)
    assert names == {"parts", "pairs", "both", "shadowed", "walrus", "a", "b"}
    assert container_names(function, ["xs", "ys"], lambda name: name == "list") == {"parts", "pairs", "shadowed",
                                                                                    "walrus", "a", "b"}


GATED = '''
def make(cfg):
    if cfg.flag:
        return Manager()
    return Plain()

@register(Decorated() if cfg.flag else None)
def decorated():
    return Other()

def skipped(cfg):
    if cfg.other:
        return Manager()
'''


def test_gated_calls_skip_only_the_functions_that_read_no_switch():
    calls, spans = optin._gated_calls(textwrap.dedent(GATED), frozenset({"flag"}))
    assert calls == {"Manager": [(4, "flag"), (13, None)], "Plain": [(5, None)],
                     "Decorated": [(7, "flag")], "Other": [(9, None)], }
    assert sorted(spans) == [(4, 4, "flag"), (7, 7, "flag")]
