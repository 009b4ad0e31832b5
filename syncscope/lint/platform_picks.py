"""Classes a platform picks, and the base-class methods that therefore never run on CUDA.

A serving engine often lets its platform choose the implementation of a role: vLLM's
`current_platform.get_punica_wrapper()` returns a class path string
(`"vllm.lora.punica_wrapper.punica_gpu.PunicaWrapperGPU"` from the CUDA platform,
`"...punica_cpu.PunicaWrapperCPU"` from the CPU one), and the caller builds that class and holds
it as the base (`punica_wrapper: PunicaWrapperBase`). A call on such a receiver resolves to the
base's method. On a CUDA GPU the object is the class the CUDA platform picks; when that class
overrides the method without calling it (no call of that name in the override), the base's body
never runs on CUDA. This holds only when the base's objects are the platforms' picks: every class
below the base is a class path some platform returns (the others run on their platforms only),
and the base itself is the role the picks share (never picked itself).

The per-file walk records a function's returned class path strings (`note_class_path`, as
`returns_path`); the whole-program pass names the platform classes (a class whose name has the
word `platform`, in its name or a base's; CUDA when its name has a CUDA word) and decides
(`overridden_on_cuda`).
"""

from __future__ import annotations

import ast
import re

_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*){2,}$")  # `pkg.module.Class`: three parts at least
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")


def note_class_path(facts: dict, value) -> None:
    """`return "vllm.lora.punica_wrapper.punica_gpu.PunicaWrapperGPU"`: keep the string."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str) and _PATH.match(value.value):
        last = value.value.rsplit(".", 1)[-1]
        if last[:1].isupper():  # a class by its name
            facts.setdefault("returns_path", []).append(value.value)


def _words(name: str) -> set[str]:
    return {w.lower() for part in name.split("_") for w in _CAMEL.findall(part)}


def _platform_kind(program, cls: str, cuda_words) -> str | None:
    """"cuda" for a CUDA platform class (`CudaPlatformBase`), "other" for any other platform
    class (`CpuPlatform`, the interface `Platform`), else None."""
    short = cls.rsplit(".", 1)[-1]
    if not any("platform" in _words(k.rsplit(".", 1)[-1]) for k in program.mro(cls)):
        return None
    own = _words(short)
    if own & cuda_words:
        return "cuda"
    return "other"  # another platform's, or the interface's default: picked, but not on CUDA


def platform_picks(program, library) -> tuple[set[str], set[str]]:
    """(classes a CUDA platform picks, classes only other platform classes pick): the class path
    strings that a platform class's methods return, its own or inherited (a CUDA platform that
    keeps the interface's default picks what the default returns), resolved in the tree."""
    returning: dict[str, list[str]] = {}  # method name -> the platform methods returning a path
    for qualname, facts in program.functions.items():
        owner, _, name = qualname.rpartition(".")
        if facts.get("returns_path") and owner in program.classes:
            returning.setdefault(name, []).append(qualname)
    cuda_words = set(library.cuda_words) - {"cuda_alike"}
    cuda, other = set(), set()
    owners = {q.rpartition(".")[0] for each in returning.values() for q in each}
    platforms = {cls for cls in program.classes if any(o in program.mro(cls) for o in owners)}
    for cls in platforms:
        kind = _platform_kind(program, cls, cuda_words)
        if kind is None:
            continue
        for name in returning:
            runs = _lookup(program, cls, name)
            for path in (program.functions[runs].get("returns_path") or ()) if runs else ():
                found = program.chase(path, True)
                if found is not None and found in program.classes:
                    (cuda if kind == "cuda" else other).add(found)
    return cuda, other - cuda


def _lookup(program, cls: str, name: str) -> str | None:
    return next((f"{k}.{name}" for k in program.mro(cls) if f"{k}.{name}" in program.functions), None)


def _calls_name(program, qualname: str, name: str) -> bool:
    return any(call.name == name for call in program.functions[qualname]["calls"])


def overridden_on_cuda(program, library) -> dict[str, str]:
    """Base-class method -> the CUDA pick that overrides it without calling it, for bases whose
    every subclass in the tree is some platform's pick (and not picked itself)."""
    cuda, other = platform_picks(program, library)
    picked = cuda | other
    if not cuda:
        return {}
    below: dict[str, set[str]] = {}
    for name in program.classes:
        for base in program.mro(name)[1:]:
            below.setdefault(base, set()).add(name)
    methods: dict[str, list[str]] = {}
    for qualname in program.functions:
        owner, _, name = qualname.rpartition(".")
        if owner in program.classes:
            methods.setdefault(owner, []).append(qualname)

    def skips(pick: str, base: str, name: str) -> bool:
        """The pick's object never runs `base.name`: its lookup lands below the base, and no
        method of the pick or of a class between them calls that name (`super().name(...)`)."""
        order = program.mro(pick)
        if base not in order[1:]:
            return True  # not one of the base's objects
        runs = _lookup(program, pick, name)
        if runs is None or runs == f"{base}.{name}" or base not in program.mro(runs.rpartition(".")[0]):
            return False
        between = order[:order.index(base)]
        return not any(_calls_name(program, method, name) for cls in between for method in methods.get(cls, ()))

    found: dict[str, str] = {}
    for pick in sorted(cuda):
        for base in program.mro(pick)[1:]:
            if base in picked or not below.get(base, set()) <= picked:
                continue
            for qualname in methods.get(base, ()):
                name = qualname.rpartition(".")[2]
                if not name.startswith("__") and qualname not in found \
                        and all(skips(c, base, name) for c in sorted(cuda)):
                    found[qualname] = pick
    return found
