"""A module-level cache keyed by a module's identity is filled once per module (branches.py
`cache_fill`, cache_lookups.py `by_identity` with the function's module parameters). SGLang 0.5.23's DSpark draft model stacks its layers' KV weights once,
under `id(wkv_linears[0])` (`wkv_linears: list[torch.nn.Module]`), and checks the stacked
scales with an `assert torch.all(...)` inside the build; every per-step call after the first
hits the cache. A cache keyed by a tensor's identity (`id(cu_seqlens)`: a new tensor every
step) is no such memo. Small package: the cache in one module, the per-step caller in another."""

from __future__ import annotations

from test_lint_scope import lint_package, where

STACK = """
    import torch
    from torch import nn

    _STACKED_CACHE: dict = {}

    def _build(linears: list[nn.Module]) -> torch.Tensor:
        weight = torch.cat([m.weight for m in linears])
        assert torch.all(weight == weight)
        return weight

    def stacked(*, linears: list[nn.Module]) -> torch.Tensor:
        key = id(linears[0])
        cached = _STACKED_CACHE.get(key)
        if cached is None:
            cached = _build(linears)
            _STACKED_CACHE[key] = cached
        return cached
"""

MODEL = """
    import torch
    from torch import nn
    from pkg.stack import stacked

    class Draft(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor):
            return x @ stacked(linears=[self.a, self.b]).T
"""


def _chains(found):
    return [f for f in found if f[2].startswith("SYN60")]


def test_a_cache_keyed_by_a_module_is_filled_once(tmp_path):
    # VALID: the keyed local, the key written in place, and `if key not in CACHE:`
    assert _chains(where(lint_package(tmp_path, {"stack.py": STACK, "model.py": MODEL}))) == []
    inline = STACK.replace("cached = _STACKED_CACHE.get(key)", "cached = _STACKED_CACHE.get(id(linears[0]))") \
        .replace("_STACKED_CACHE[key] = cached", "_STACKED_CACHE[id(linears[0])] = cached")
    assert _chains(where(lint_package(tmp_path, {"stack.py": inline, "model.py": MODEL}))) == []
    missing = STACK.replace("cached = _STACKED_CACHE.get(key)\n        if cached is None:\n            cached = _build(linears)\n"
                            "            _STACKED_CACHE[key] = cached\n        return cached",
                            "if key not in _STACKED_CACHE:\n            _STACKED_CACHE[key] = _build(linears)\n"
                            "        return _STACKED_CACHE[key]")
    assert "if key not in _STACKED_CACHE:" in missing
    assert _chains(where(lint_package(tmp_path, {"stack.py": missing, "model.py": MODEL}))) == []


def test_other_keys_and_tests_keep_the_sync(tmp_path):
    # INVALID twins: the parameter is not declared a module (a tensor list: a new one every
    # step), the key is the list itself (`id(linears)`: the caller builds a new list every
    # step), a test that also rebuilds (`or cached.numel() < 8`), and a test of something
    # other than the lookup (a module-level switch)
    for before, after in (("linears: list[nn.Module]) -> torch.Tensor:\n        key",
                           "linears: list[torch.Tensor]) -> torch.Tensor:\n        key"),
                          ("key = id(linears[0])", "key = id(linears)"),
                          ("if cached is None:", "if cached is None or cached.numel() < 8:"),
                          ("if cached is None:", "if _REBUILD is None:")):
        changed = STACK.replace(before, after)
        assert changed != STACK, before
        found = where(lint_package(tmp_path, {"stack.py": changed, "model.py": MODEL}))
        assert ("pkg/model.py", 13, "SYN601") in found or ("pkg/model.py", 13, "SYN602") in found, (after, found)


def test_the_why_names_the_cache(tmp_path):
    run = lint_package(tmp_path, {"stack.py": STACK, "model.py": MODEL}, include_cold=True)
    [cold] = [f for f in run.findings if f.site.path == "pkg/stack.py" and f.code == "SYN602"]
    assert cold.cold == "fills the module's cache `_STACKED_CACHE`: runs once per key"


def test_containers_of_modules_are_read_from_the_annotation():
    import ast

    from syncscope.lint.memo_params import module_params

    source = ("def f(a: list[nn.Module], b: Sequence[torch.nn.Module], c: tuple[nn.Module, ...],\n"
              "      d: tuple[nn.Module, int], e: nn.Module, g: list[torch.Tensor]): pass\n")
    function = ast.parse(source).body[0]
    aliases = {"nn": "torch.nn"}
    types = ("torch.nn.Module",)
    assert module_params(function, aliases, types, containers=True) == {"a", "b", "c"}
    assert module_params(function, aliases, types) == {"e"}
