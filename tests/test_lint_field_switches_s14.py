"""Switches a constructor keeps, with compact per-file tables (field_switches.FileFields.table):
one flat tuple per file, the constructor's stores only (`self.F = P` in `__init__`); every other
`self.F` store of a family is read again from its files in the pass, only for a field that every
construction turns on. The packages are test_lint_field_switches_s13's allocator; each VALID one
leaves the eager path's sync out of the default report, each INVALID twin keeps it."""

from __future__ import annotations

import ast
import textwrap

from test_lint_field_switches_s13 import ALLOC, POOL, alloc

from syncscope.lint.field_switch_reads import PassesRead, sections
from syncscope.lint.flagguards import file_flags

SUBCLASS = """
    from pkg.alloc import Allocator

    class Quiet(Allocator):
        def reset(self):
            self.lazy = False
"""


def test_a_subclass_in_another_file_that_stores_the_field_keeps_the_sync(tmp_path):
    # INVALID: the subclass's file has no guard and no constructor store: the pass reads it again
    assert alloc(tmp_path, quiet=SUBCLASS) != []


def test_a_subclass_constructor_that_stores_another_value_keeps_the_sync(tmp_path):
    # INVALID: `self.lazy = True` is no parameter of the subclass's constructor
    quiet = SUBCLASS.replace("""        def reset(self):
            self.lazy = False""", """        def __init__(self, size: int):
            super().__init__(size, lazy=True)
            self.lazy = bool(size % 2)""")
    assert alloc(tmp_path, quiet=quiet) != []


def test_a_field_of_the_same_name_in_an_unrelated_class_does_not_count(tmp_path):
    # VALID: `Other` is not in the allocator's family, so its store says nothing about it
    other = SUBCLASS.replace("from pkg.alloc import Allocator\n", "").replace("class Quiet(Allocator):", "class Other:")
    assert alloc(tmp_path, quiet=other) == []
    # INVALID twin: the same class made a subclass
    assert alloc(tmp_path, quiet=SUBCLASS) != []


def test_a_helper_that_only_passes_its_kwargs_on_in_a_file_of_its_own(tmp_path):
    # VALID: the file holding the helper has no class, guard or return the rule reads
    pool = POOL.replace("from pkg.alloc import Allocator", "from pkg.alloc import Allocator\n    from pkg.build import build") \
        .replace("self._build(size=size, lazy=lazy)", "build(size=size, lazy=lazy)") \
        .replace("""        def _build(self, **kwargs):
            return Allocator(**kwargs)
""", "")
    assert "_build" not in pool
    helper = """
    from pkg.alloc import Allocator

    def build(**kwargs):
        return Allocator(**kwargs)
"""
    assert alloc(tmp_path, pool=pool, build=helper) == []
    # INVALID twin: the helper changes what it passes on
    assert alloc(tmp_path, pool=pool, build=helper.replace("        return Allocator", "        kwargs.pop(\"lazy\")\n        return Allocator")) != []


def test_the_per_file_table_is_flat_and_keeps_the_constructor_stores_only():
    tree = ast.parse(textwrap.dedent(ALLOC + """
    def make(size):
        return Allocator(size, True), Allocator(size, lazy=True)
"""))
    _, passes, table = file_flags(tree, "pkg.alloc")
    assert all(type(x) in (str, int) or (type(x) is tuple and all(type(y) in (str, int) for y in x)) for x in table)
    guards, inits, others, returns, kwargs, passed = sections(table)
    assert inits == ("pkg.alloc.Allocator", "lazy", "lazy")  # not `pages`, not `pending`
    assert guards[0] == "pkg.alloc.Allocator.free" and guards[3] == "lazy"
    assert others == () and kwargs == ()
    # the on values are in the table, not in flag_passes; read together through PassesRead
    assert passes == {}
    line = next(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple))

    class Result:
        flag_passes, field_switches = passes, table

    read = PassesRead({"alloc.py": Result}).get("alloc.py")
    assert sorted(map(str, (items for (at, _), (_, items, _) in read.items() if at == line))) == ["{'lazy': 'true'}", "{1: 'true'}"]


def test_an_edit_that_only_moves_lines_of_a_file_with_a_table_is_a_move(tmp_path):
    # the table's lines are written out for lineshift.py, as flag_passes' are
    from lint_helpers import make_config

    from syncscope.lint.lineshift import line_map
    from syncscope.lint.worker import analyze_bytes

    config = make_config(tmp_path)
    source = textwrap.dedent(ALLOC + """
    def make(size):
        return Allocator(size, lazy=True)
""")

    def analyzed(text):
        return analyze_bytes(text.encode(), "pkg.alloc", False, config)

    before = analyzed(source)
    assert before.field_switches
    moved = line_map(before, analyzed(source.replace("    def free", "    # why\n\n    def free")))
    assert moved is not None and moved[max(moved)] == max(moved) + 2
    # another value passed is no move
    assert line_map(before, analyzed(source.replace("lazy=True", "lazy=not True"))) is None
