"""A method call on a receiver of unknown class (`self.comm.all_gather(x)`) is followed by name
only into classes the caller's module can name (importclosure.py): the class's module, or one
of its in-tree bases' or subclasses' modules, is one the caller's module imports (at its top,
under `if TYPE_CHECKING:`, in a function, or names in a string), or one such a module imports. SGLang's diffusion attention layer calls
`x.all_gather(...)`; by name alone it reached the LLM engine's `GroupCoordinator.all_gather`,
a class no diffusion module imports. Small packages: an engine part and a diffusion part."""

from __future__ import annotations

from test_lint_scope import lint_package


def where(run) -> list[tuple[str, int, str]]:
    return sorted((f.site.path, f.site.line, f.code) for f in run.findings)


def lines_of(run, path: str) -> set[int]:
    return {f.site.line for f in run.findings if f.site.path == path}


COORD = """
    import torch

    class GroupCoordinator:
        def all_gather(self, x: torch.Tensor, dim: int = 0):
            return int(x.sum().item())
"""

GEN_ATTN = """
    import torch
    from pkg.gen.comm import CommBase

    class DistributedAttention(torch.nn.Module):
        def __init__(self, comm):
            self.comm = comm

        def forward(self, x: torch.Tensor):
            return self.comm.all_gather(x, dim=1)
"""

GEN_COMM = """
    import torch

    class CommBase:
        def all_gather(self, x: torch.Tensor, dim: int = 0):
            raise NotImplementedError
"""

PLUGIN = """
    import torch
    from pkg.gen.comm import CommBase

    class NcclComm(CommBase):
        def all_gather(self, x: torch.Tensor, dim: int = 0):
            return x.nonzero()
"""

ENGINE = """
    from pkg.llm.coord import GroupCoordinator

    def make_group():
        return GroupCoordinator()
"""

# (a module no module imports is loaded by a name built at run time, a model registry's: any
# code may hold its classes; the engine's module imports the coordinator's)
FILES = {"llm/coord.py": COORD, "llm/engine.py": ENGINE, "gen/attn.py": GEN_ATTN, "gen/comm.py": GEN_COMM, "plugins/nccl.py": PLUGIN}


def test_a_class_the_callers_module_never_imports_is_not_reached(tmp_path):
    # VALID (left out): `self.comm.all_gather(x, dim=1)` in the diffusion layer does not run the
    # engine's `GroupCoordinator.all_gather`: no module the layer's import runs defines it or a
    # base of it; its sync is cold (nothing per step reaches it)
    run = lint_package(tmp_path, FILES)
    assert 6 not in lines_of(run, "pkg/llm/coord.py"), where(run)
    cold = lint_package(tmp_path, FILES, include_cold=True)
    assert 6 in lines_of(cold, "pkg/llm/coord.py"), where(cold)


def test_a_subclass_of_a_base_the_caller_imports_is_reached(tmp_path):
    # INVALID (reported): `NcclComm` is built elsewhere (its module is not imported by the
    # layer's), but it subclasses the `CommBase` the layer imports: the call may run it
    run = lint_package(tmp_path, FILES)
    assert 7 in lines_of(run, "pkg/plugins/nccl.py"), where(run)


def test_a_class_imported_transitively_or_for_type_checking_is_reached(tmp_path):
    # INVALID (reported): the layer's module imports `pkg.gen.glue`, which imports the
    # coordinator's module (under `if TYPE_CHECKING:`): the layer can name the class, the
    # call may run its `all_gather`
    glue = """
        from typing import TYPE_CHECKING
        if TYPE_CHECKING:
            from pkg.llm.coord import GroupCoordinator
    """
    attn = GEN_ATTN.replace("from pkg.gen.comm import CommBase", "from pkg.gen.comm import CommBase\n    import pkg.gen.glue as glue")
    run = lint_package(tmp_path, {**FILES, "gen/glue.py": glue, "gen/attn.py": attn})
    assert 6 in lines_of(run, "pkg/llm/coord.py"), where(run)


def test_a_class_a_function_imports_or_a_registry_names_is_reached(tmp_path):
    # INVALID (reported): the layer's factory imports the coordinator inside a function (a lazy
    # import), or a registry names its module in a string (`importlib` loads it): the layer
    # can build one, the call may run its `all_gather`
    lazy = GEN_ATTN + """
    def make_comm():
        from pkg.llm.coord import GroupCoordinator
        return GroupCoordinator()
"""
    run = lint_package(tmp_path, {**FILES, "gen/attn.py": lazy})
    assert 6 in lines_of(run, "pkg/llm/coord.py"), where(run)
    registry = GEN_ATTN + """
    COMMS = {"nccl": ("pkg.llm.coord", "GroupCoordinator")}
"""
    run = lint_package(tmp_path, {**FILES, "gen/attn.py": registry})
    assert 6 in lines_of(run, "pkg/llm/coord.py"), where(run)


def test_a_class_only_a_package_init_imports_is_not_reached(tmp_path):
    # VALID (left out): importing `pkg.gen.comm` runs `pkg/gen/__init__.py` first, which imports
    # the coordinator's module; but the layer's code is not written against what its package's
    # `__init__` imports (in a serving tree that is most of the tree, lazily)
    init = """
        from pkg.llm.coord import GroupCoordinator
    """
    run = lint_package(tmp_path, {**FILES, "gen/__init__.py": init})
    assert 6 not in lines_of(run, "pkg/llm/coord.py"), where(run)


def test_a_class_imported_several_modules_away_is_reached(tmp_path):
    # INVALID (reported): the layer imports `far`, which imports `glue`, which imports the
    # coordinator's module: the layer's import runs it, the call may run its `all_gather`
    glue = """
        from pkg.llm import coord
    """
    far = """
        from pkg.gen import glue
    """
    attn = GEN_ATTN.replace("from pkg.gen.comm import CommBase", "from pkg.gen.comm import CommBase\n    from pkg.gen import far")
    run = lint_package(tmp_path, {**FILES, "gen/glue.py": glue, "gen/far.py": far, "gen/attn.py": attn})
    assert 6 in lines_of(run, "pkg/llm/coord.py"), where(run)


def test_a_class_no_module_imports_may_be_anywhere(tmp_path):
    # INVALID (reported): without the engine module nothing imports the coordinator's module:
    # a registry may load it by a name it builds, and hand one to anyone
    files = {name: text for name, text in FILES.items() if name != "llm/engine.py"}
    run = lint_package(tmp_path, files)
    assert 6 in lines_of(run, "pkg/llm/coord.py"), where(run)


def test_a_class_whose_module_imports_the_callers_is_reached(tmp_path):
    # INVALID (reported): the coordinator's module imports the layer's (it may build the layer
    # and hand it itself), so the layer may hold a coordinator
    coord = COORD.replace("import torch", "import torch, pkg.gen.attn as attn", 1)
    run = lint_package(tmp_path, {**FILES, "llm/coord.py": coord})
    assert 6 in lines_of(run, "pkg/llm/coord.py"), where(run)


def test_a_class_the_builder_of_the_callers_class_knows_is_reached(tmp_path):
    # INVALID (reported): a pipeline module builds the layer and imports the coordinator: it
    # may hand the layer one (`DistributedAttention(comm=GroupCoordinator())`)
    pipeline = """
        from pkg.gen.attn import DistributedAttention
        from pkg.llm.coord import GroupCoordinator

        def build():
            return DistributedAttention(GroupCoordinator())
    """
    run = lint_package(tmp_path, {**FILES, "gen/pipeline.py": pipeline})
    assert 6 in lines_of(run, "pkg/llm/coord.py"), where(run)
