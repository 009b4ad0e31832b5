"""Switches a constructor keeps (field_switches.py): a field set from a constructor parameter that
every construction in the tree turns on by default (an environment variable declared off and read
as `not envs.X.get()`, passed down through factories, composite constructors and `**kwargs`). The
eager path after `if self.lazy: ...; return` does not run by default. Each VALID package leaves the
allocator's sync out of the default report; each INVALID twin keeps it."""

from __future__ import annotations

from test_lint_guards import lines
from test_lint_scope import lint_package

ENVS = """
    class EnvBool:
        def __init__(self, default):
            self.default = default

        def get(self):
            return self.default

    class Envs:
        SYNC_DISABLE_LAZY_FREE = EnvBool(False)

    envs = Envs()
"""

ALLOC = """
    import torch

    class Allocator:
        def __init__(self, size: int, lazy: bool = False):
            self.lazy = lazy
            self.pages = torch.zeros(size, device="cuda")
            self.pending = []

        def free(self, index: torch.Tensor):
            if self.lazy:
                self.pending.append(index)
                return
            if bool((self.pages[index] < 0).any().item()):
                raise ValueError("double free")
"""

POOL = """
    from pkg.alloc import Allocator

    class Composite:
        def __init__(self, size: int, lazy: bool = False):
            self.full = Allocator(size, lazy=lazy)
            self.other = self._build(size=size, lazy=lazy)

        def _build(self, **kwargs):
            return Allocator(**kwargs)

    def make_pool(size: int, lazy: bool = False):
        return Composite(size, lazy=lazy)
"""

CONFIG = """
    from pkg.envs import envs
    from pkg.pool import make_pool

    def _lazy_enabled() -> bool:
        return not envs.SYNC_DISABLE_LAZY_FREE.get()

    def configure(size: int):
        return make_pool(size, lazy=_lazy_enabled())
"""

RUNNER = """
    import torch
    from pkg.alloc import Allocator

    class Runner:
        def __init__(self, alloc: Allocator):
            self.alloc = alloc

        def execute_model(self, done: torch.Tensor):
            self.alloc.free(done)
"""


def alloc(tmp_path, **changed):
    files = {"envs.py": ENVS, "alloc.py": ALLOC, "pool.py": POOL, "config.py": CONFIG, "runner.py": RUNNER}
    files.update({f"{name}.py": text for name, text in changed.items()})
    return lines(lint_package(tmp_path, files), "pkg/alloc.py")


def test_the_eager_path_of_a_switch_every_construction_turns_on_is_not_reported(tmp_path):
    assert alloc(tmp_path) == []


def test_baseline_the_sync_is_found_without_the_switch(tmp_path):
    # INVALID: nothing guards the eager path
    assert alloc(tmp_path, alloc=ALLOC.replace("if self.lazy:", "if index is None:")) != []


def test_a_construction_that_leaves_the_switch_out_keeps_the_sync(tmp_path):
    # INVALID: a direct construction takes the default, False
    runner = RUNNER.replace("self.alloc = alloc", "self.alloc = alloc\n            self.spare = Allocator(8)")
    assert alloc(tmp_path, runner=runner) != []


def test_an_environment_variable_the_tree_sets_or_declares_on_keeps_the_sync(tmp_path):
    # INVALID: the variable is on by default, so `not` of it is off
    assert alloc(tmp_path, envs=ENVS.replace("EnvBool(False)", "EnvBool(True)")) != []
    # INVALID: the tree turns the variable on itself
    config = CONFIG.replace("def configure(size: int):", "def configure(size: int):\n        envs.SYNC_DISABLE_LAZY_FREE.set(True)")
    assert alloc(tmp_path, config=config) != []


def test_kwargs_changed_on_the_way_keep_the_sync(tmp_path):
    # INVALID: the helper turns the switch off in the `**kwargs` it passes on
    pool = POOL.replace("""            return Allocator(**kwargs)""", """            kwargs["lazy"] = False
            return Allocator(**kwargs)""")
    assert alloc(tmp_path, pool=pool) != []


def test_a_field_stored_elsewhere_keeps_the_sync(tmp_path):
    # INVALID: another method turns the field off
    allocator = ALLOC.replace("""        def free(self""", """        def disable(self):
            self.lazy = False

        def free(self""")
    assert alloc(tmp_path, alloc=allocator) != []


def test_a_subclass_that_turns_it_off_and_frees_its_own_way_does_not_count(tmp_path):
    # VALID: the subclass's instances never run the base `free`
    allocator = ALLOC + """
    class FloatAllocator(Allocator):
        def __init__(self, **kwargs):
            kwargs["lazy"] = False
            super().__init__(**kwargs)

        def free(self, index: torch.Tensor):
            self.pending.append(index)
"""
    pool = POOL.replace("from pkg.alloc import Allocator", "from pkg.alloc import Allocator, FloatAllocator").replace(
        "            return Allocator(**kwargs)", "            return FloatAllocator(**kwargs)")
    assert alloc(tmp_path, alloc=allocator, pool=pool) == []
    # INVALID twin: the subclass's `free` calls the base one
    allocator = allocator.replace("            self.pending.append(index)\n", "            super().free(index)\n")
    allocator = allocator.replace("""                self.pending.append(index)
                return
            if bool""", """                self.pending.append(index)
                return
            if bool""")
    assert alloc(tmp_path, alloc=allocator.replace("""        def free(self, index: torch.Tensor):
            self.pending.append(index)""", """        def free(self, index: torch.Tensor):
            super().free(index)"""), pool=pool) != []


def test_a_class_that_builds_itself_keeps_the_sync(tmp_path):
    # INVALID: a class method builds the class with the switch off, where no name shows it
    allocator = ALLOC.replace("""        def free(self""", """        @classmethod
        def small(cls):
            return cls(8, lazy=False)

        def free(self""")
    assert alloc(tmp_path, alloc=allocator) != []


def test_another_call_on_the_construction_line_does_not_count_for_it(tmp_path):
    # INVALID: the construction leaves the switch out; only a call inside its arguments passes it
    runner = RUNNER.replace("self.alloc = alloc", "self.alloc = alloc\n            self.spare = Allocator(tag(lazy=True))")
    runner = runner.replace("class Runner:", "def tag(lazy: bool = False):\n        return 8\n\n    class Runner:")
    assert alloc(tmp_path, runner=runner) != []


def test_a_literal_true_in_every_construction_decides_it_too(tmp_path):
    # VALID: no environment at all: every construction passes True, by keyword or by place
    pool = POOL.replace("Allocator(size, lazy=lazy)", "Allocator(size, True)").replace(
        "self._build(size=size, lazy=lazy)", "self._build(size=size, lazy=True)")
    assert alloc(tmp_path, pool=pool) == []
