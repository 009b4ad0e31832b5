"""What a per-step walk (reachability.PerStep) reads of the program and nothing else: the same
for every walk of one pass, so the second walk (per_step_table's, after request and start-up
roots are demoted) takes the first's instead of building them again (a few tenths of a second
on whole vLLM). A walk's own state (its cold lines, demoted roots, what it reached) stays on the walk."""

from __future__ import annotations

from .attr_classes import AttributeClasses
from .branches import platform_path
from .element_receivers import ElementReceivers
from .importclosure import ImportClosure
from .modules import ModuleKinds
from .platform_picks import overridden_on_cuda
from .receivers import DeclaredReceivers
from .toolpaths import tool_path


class ProgramTables:
    def __init__(self, program, results: dict, library) -> None:
        self.other_platform = {path: platform_path(path, library) for path in results}
        self.tools = {path: tool_path(path, library) for path in results}  # benchmarks, canaries
        # base methods the CUDA platform's pick overrides: never run on CUDA (platform_picks.py)
        self.overridden = overridden_on_cuda(program, library)
        self.dispatch: dict[str, list] = {}
        for result in results.values():
            for qualname, calls in (getattr(result, "dispatch", None) or {}).items():
                self.dispatch.setdefault(qualname, []).extend(calls)
        # methods by name (what an unknown receiver's call may reach), module functions by
        # name (what a registered custom op `torch.ops.<ns>.<name>` runs)
        self.methods: dict[str, list[str]] = {}
        self.module_functions: dict[str, list[str]] = {}
        for qualname in program.functions:
            owner, _, short = qualname.rpartition(".")
            table = self.methods if owner in program.classes else self.module_functions
            table.setdefault(short, []).append(qualname)
        # per-request entries (modules.py)
        self.kinds = ModuleKinds(program, results, library)
        self.receivers = DeclaredReceivers(program, self.kinds, self.dispatch,
                                           AttributeClasses(program, results, self.other_platform.get),
                                           ElementReceivers(program, results))
        self.straight: dict[str, tuple] = {}
        self.loops: dict[str, tuple] = {}
        self.spans: dict[str, tuple] = {}
        for result in results.values():
            self.straight.update(getattr(result, "straight", None) or {})
            self.loops.update(getattr(result, "loops", None) or {})
            self.spans.update(getattr(result, "spans", None) or {})
        imports = {result.module: getattr(result, "imports", ()) for result in results.values() if result.module}
        builders: dict[str, set] = {}
        for result in results.values():
            for _maker, made, *_ in getattr(result, "makes", ()) or ():
                inner = program.chase(made, True)
                if inner is not None and result.module:
                    builders.setdefault(inner, set()).add(result.module)
        self.imports = ImportClosure(program, imports, self.kinds.bases, self.kinds.subclasses, builders)
        self.module_of = {path: result.module for path, result in results.items()}
