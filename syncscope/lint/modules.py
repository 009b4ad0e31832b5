"""Which classes may be `nn.Module`s: whether a `forward` is a per-step root by its name.

`forward` (and `forward_*`, `_forward*`: `[roots] module-methods` of the library facts) is a
per-step root because `nn.Module.__call__` runs it, and a model's modules run every step.
Other classes use the same name for other things: a diffusion pipeline stage
(`class DenoisingStage(PipelineStage)`, `class PipelineStage(StageDedupMixin, ABC)`) names its
once-per-request entry point `forward(batch, server_args)`. A class is known not to be a module
when every base on its in-tree chain ends in a class that is not one (`[roots]
not-module-bases`: `abc.ABC`, `typing.Generic`, `builtins.object`, ...) or in none at all, and
at least one of them says so: a bare `class Runner:` is no evidence (SGLang's `ModelRunner`, a
user's `class Sampler:` run every step), while `class PipelineStage(Mixin, ABC)` is. A
base the linter cannot follow (`torch.nn.Module`, another library's class, a star import) may
be a module, and so is the class: its `forward` stays a root. A mixin is a module when one of
its in-tree subclasses may be one (`class Block(ForwardMixin, nn.Module)` runs the mixin's
`forward` as a module's).
"""

from __future__ import annotations

import fnmatch
import re


# What a class's bases say (ordered: the highest found on any base wins)
_BARE, _PLAIN, _MODULE = 0, 1, 2


def _pattern(patterns) -> re.Pattern | None:
    return re.compile("|".join(fnmatch.translate(p) for p in patterns)) if patterns else None


class ModuleKinds:
    def __init__(self, program, results: dict, library) -> None:
        self.program = program
        self.bases: dict[str, tuple] = {}
        for result in results.values():
            for cls, bases in (getattr(result, "bases", None) or {}).items():
                self.bases.setdefault(cls, bases)
        self.plain = _pattern(library.not_module_bases)
        self.methods = _pattern(library.module_methods)
        self.subclasses: dict[str, list[str]] = {}
        for cls, bases in self.bases.items():
            for base in bases:
                inner = program.chase(base, True) if base else None
                if inner:
                    self.subclasses.setdefault(inner, []).append(cls)
        self._module: dict[str, int] = {}
        self._family: dict[str, bool] = {}
        # who constructs each in-tree class (loops.py): class -> {the class whose code does, or
        # None for a module-level function or statement}
        self.makers: dict[str, set] = {}
        for result in results.values():
            for maker, made, *_ in getattr(result, "makes", ()) or ():
                inner = program.chase(made, True)
                if inner is not None:
                    self.makers.setdefault(inner, set()).add(maker)
        self.module_types = _pattern(getattr(library, "module_types", ()))
        self.step_stages = _pattern(getattr(library, "step_stages", ()))
        self.request_bases = _pattern(getattr(library, "request_modules", ()))
        self.input_bases = _pattern(getattr(library, "input_processors", ()))
        self._request: dict[str, bool] = {}

    def may_be_module(self, cls: str) -> bool:
        return self._kind(cls) != _PLAIN

    def _kind(self, cls: str) -> int:
        """_MODULE (may be one), _PLAIN (a base on its chain says it is not one) or _BARE (no
        base at all on its chain: no evidence either way, so it is treated as a module)."""
        known = self._module.get(cls)
        if known is not None:
            return known
        self._module[cls] = _BARE  # a cycle of bases adds nothing
        bases = self.bases.get(cls)
        kind = _MODULE if bases is None else _BARE  # a class the facts do not know may be anything
        for base in bases or ():
            if base is None:
                kind = _MODULE
            else:
                inner = self.program.chase(base, True)
                if inner is not None:
                    kind = max(kind, self._kind(inner))
                elif self.plain and self.plain.match(base):
                    kind = max(kind, _PLAIN)
                else:
                    kind = _MODULE
            if kind == _MODULE:
                break
        self._module[cls] = kind
        return kind

    def declared_module(self, receiver: tuple) -> bool:
        """A receiver declared as `nn.Module` itself (`[roots] module-types`: `self.base_layer:
        nn.Module`, a parameter `layer: torch.nn.Module`): whatever it holds is a module, so a
        method called on it is a method of a class that may be one."""
        if self.module_types is None:
            return False
        declared = self.program.declared_class(receiver)
        return declared is not None and self.program.chase(declared, True) is None \
            and bool(self.module_types.match(declared))

    def protocol(self, cls: str) -> bool:
        """A class on whose chain a base is a `Protocol`: a class may match it without inheriting."""
        return any(str(base).endswith("Protocol") for klass in self.program.mro(cls)
                   for base in (self.bases.get(klass) or ()))

    def known_module(self, cls: str) -> bool:
        """Its in-tree chain ends in a base the linter cannot follow (`torch.nn.Module`): a
        module as far as the program shows (a bare class is no evidence)."""
        return cls in self.bases and self._kind(cls) == _MODULE

    def family_may_be_module(self, cls: str) -> bool:
        """The class or one of its in-tree subclasses (which inherit its methods) may be a module."""
        known = self._family.get(cls)
        if known is not None:
            return known
        found = self._any_in_family(cls, self.may_be_module)
        self._family[cls] = found
        return found

    def _any_in_family(self, cls: str, test) -> bool:
        """Whether `test` holds for `cls` or one of its in-tree subclasses, at any depth."""
        pending, seen = [cls], set()
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            seen.add(current)
            if test(current):
                return True
            pending.extend(self.subclasses.get(current, ()))
        return False

    def request_entry(self, qualname: str) -> bool:
        """A method named like a module's per-step entry (`forward`) in a class that is not a
        module: it runs when its caller decides (a pipeline stage: once per request), unless
        the class is a stage that runs once per denoising step (`[roots] step-stages`)."""
        owner, _, short = qualname.rpartition(".")
        if not self.methods or owner not in self.program.classes or not self.methods.match(short):
            return False
        return not self.family_may_be_module(owner) and not self.step_stage(owner)

    def step_stage(self, cls: str) -> bool:
        """The class or an in-tree base on its chain is named as a stage that runs once per
        denoising step (`[roots] step-stages`, fnmatch on the class's own name)."""
        return self.step_stages is not None and any(self.step_stages.match(klass.rsplit(".", 1)[-1])
                                                    for klass in self.program.mro(cls))

    def request_module(self, cls: str) -> bool:
        """A module that runs once per request (`[roots] request-modules`: a diffusion pipeline's
        text encoder), or one that only such modules construct (the encoder's decoder layers,
        its vision tower), and so does every in-tree subclass (they inherit its `forward`). A
        class some other code constructs, or that nothing in the tree constructs and that has no
        such base, stays a per-step module."""
        known = self._request.get(cls)
        if known is not None:
            return known
        self._request[cls] = False  # a cycle of makers proves nothing
        found = not self._any_in_family(cls, lambda current: not self._request_class(current))
        self._request[cls] = found
        return found

    def _request_class(self, cls: str) -> bool:
        if not (self.request_bases or self.input_bases) or not self.may_be_module(cls):
            return False
        makers = self.makers.get(cls, set())
        if self.request_bases and any(self.request_bases.match(klass) for klass in self.program.mro(cls)):
            # an encoder by its base; unless a module that is not one builds it inside itself
            return all(m is None or not self.may_be_module(m) or self.request_module(m) for m in makers)
        return bool(makers) and None not in makers and \
            all(self.input_processor(m) or self.request_module(m) for m in makers)

    def processor_built(self, cls: str) -> bool:
        """Every in-tree construction of the class is in a host-side input processor."""
        makers = self.makers.get(cls, set())
        return bool(makers) and None not in makers and all(self.input_processor(m) for m in makers)

    def input_processor(self, cls: str) -> bool:
        """A host-side input processor: a library base on the class's chain is one (`[roots]
        input-processors`: `class CohereASRFeatureExtractor(SequenceFeatureExtractor)`), so its
        code runs on a request's raw inputs, once per request."""
        return self.input_bases is not None and any(
            base is not None and self.program.chase(base, True) is None and self.input_bases.match(base)
            for klass in self.program.mro(cls) for base in (self.bases.get(klass) or ()))

    def request_module_method(self, qualname: str) -> bool:
        """`forward` (a module method) of a module that runs once per request."""
        owner, _, short = qualname.rpartition(".")
        if not self.methods or owner not in self.program.classes or not self.methods.match(short):
            return False
        return self.request_module(owner)
