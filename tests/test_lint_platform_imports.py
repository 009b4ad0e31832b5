"""A class whose `__init__` always imports another platform's package is cold (platform_imports.py).

SGLang 0.5.23's "wave" attention backend (`WaveAttnBackend`, "AMD specific" in its server
arguments) runs Wave kernels (`wave_lang`, which targets AMD GPUs only) and imports
`wave_lang.kernel.wave.cache` at the top of its `__init__`: it is never built on CUDA, and its
per-step `.item()` reads never run there (readers: `never on CUDA`, 4 verdicts out of 4). Library
facts `[platform] other-packages` name such packages. VALID: the class's syncs are cold, and so
is the call site that reaches them. INVALID twins: the import sits under an `if` or a `try`, a
`return` may end `__init__` before it, the package is no other platform's, or the import is in
another method than `__init__`: the finding stays.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

BACKEND = """
import torch


class WaveBackend:
    def __init__(self, runner, lazy=False):
{before}{indent}import {package}.kernel.wave.cache as cache

        self.runner = runner

    def forward(self, x: torch.Tensor, lens: torch.Tensor):
        n = lens.max().item()
        return x[:n]
"""

MODEL = """
import torch

from pkg.backend import WaveBackend


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backend = WaveBackend(None)

    def forward(self, x: torch.Tensor, lens: torch.Tensor):
        return self.backend.forward(x, lens)
"""

SYNC = ("pkg/backend.py", "SYN201")  # its line moves with the variants


def lint(tmp_path, package="wave_lang", before="", indent="        "):
    source = BACKEND.format(package=package, before=before, indent=indent)
    return found(lint_package(tmp_path, {"backend.py": source, "model.py": MODEL}))


def found(run) -> list[tuple[str, str]]:
    return [(path, code) for path, _, code in where(run)]


def test_a_class_that_imports_another_platforms_package_when_built_is_cold(tmp_path):
    assert lint(tmp_path) == []


def test_an_import_under_an_if_keeps_it(tmp_path):
    assert SYNC in lint(tmp_path, before="        if lazy:\n", indent="            ")


def test_an_import_under_a_try_keeps_it(tmp_path):
    source = BACKEND.format(package="wave_lang", before="        try:\n", indent="            ").replace(
        "\n\n        self.runner", "\n        except ImportError:\n            pass\n\n        self.runner")
    assert SYNC in found(lint_package(tmp_path, {"backend.py": source, "model.py": MODEL}))


def test_a_return_before_the_import_keeps_it(tmp_path):
    assert SYNC in lint(tmp_path, before="        if lazy:\n            return\n")


def test_a_package_of_no_other_platform_keeps_it(tmp_path):
    assert SYNC in lint(tmp_path, package="flashinfer")


def test_an_import_in_another_method_keeps_it(tmp_path):
    source = BACKEND.format(package="wave_lang", before="", indent="        ").replace(
        "    def __init__(self, runner, lazy=False):\n", "    def __init__(self, runner, lazy=False):\n        self.runner = runner\n\n    def setup(self):\n")
    assert SYNC in found(lint_package(tmp_path, {"backend.py": source, "model.py": MODEL}))
