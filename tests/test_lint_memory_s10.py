"""What keeps the whole-program pass's memory down (docs/lint.md, "2026-11-29 (session 10):
memory"): equal plain tuples shared across files, the cyclic garbage of the pass freed, no
table per call where a tuple does."""

from __future__ import annotations

import enum
import textwrap

from syncscope.lint.engine import lint_paths
from syncscope.lint.interning import Interner

from lint_helpers import make_config


class _Kind(enum.IntEnum):
    ONE = 1


def test_equal_plain_tuples_are_one_object_across_files():
    interner = Interner()
    first = interner.value(("f", "pkg.mod.helper", (1000, None)), {})
    second = interner.value(("f", "pkg.mod." + "helper", (1000, None)), {})
    assert first == second and first is second and first[2] is second[2]


def test_tuples_holding_other_types_equal_to_an_int_are_never_shared():
    # VALID to share: names, whole numbers, None. INVALID: True, 1.0 or an IntEnum member equal
    # to 1: the reader would get the other type back
    interner = Interner()
    plain = interner.value((1, "x"), {})
    for other in ((True, "x"), (1.0, "x"), (_Kind.ONE, "x")):
        kept = interner.value(other, {})
        assert kept == plain and kept is not plain and type(kept[0]) is type(other[0])
    nested = interner.value(((True, "x"), "y"), {})
    assert type(nested[0][0]) is bool and nested is not interner.value(((1, "x"), "y"), {})


def test_a_tuple_holding_a_list_is_kept_as_it_is():
    interner = Interner()
    held = interner.value((1, [2, 3]), {})
    assert held == (1, [2, 3])
    assert interner.value((held[1], 4), {}) == ([2, 3], 4)


def _write(root, files: dict) -> list[str]:
    paths = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
        paths.append(str(path))
    return paths


def test_findings_through_a_helper_called_from_two_files_are_the_same_with_shared_tuples(tmp_path):
    # the same call written in two files: its records are shared, each file still gets its finding
    paths = _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/util.py": """
            def helper(t):
                return t.item()
            """,
        "pkg/a.py": """
            import torch
            from pkg.util import helper

            def step(x):
                y = torch.ones(3, device="cuda")
                return helper(y)
            """,
        "pkg/b.py": """
            import torch
            from pkg.util import helper

            def step(x):
                y = torch.ones(3, device="cuda")
                return helper(y)
            """,
    })
    run = lint_paths(paths, make_config(tmp_path), jobs=1, use_cache=False)
    flagged = sorted({(f.site.path, f.site.line) for f in run.findings if f.code == "SYN601"})
    assert flagged == [("pkg/a.py", 7), ("pkg/b.py", 7)]
