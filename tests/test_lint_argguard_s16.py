"""Guards a caller's arguments decide, session 16 (branch `s-argguard`).

1. `if not torch.is_tensor(p):` (torch's own `is_tensor`, through the module or imported from
   it) runs only when `p` is not a tensor, as `not isinstance(p, torch.Tensor)` does: a number
   guard (numberguards.py), cold when every call in the tree passes a tensor for `p`. SGLang's
   beam coordinator `_stash_next_tokens(rows, tokens)`. INVALID twins: a caller passing a list
   (the prefill path), an `is_tensor` of the package's own.
2. A name a function binds with `import m` holds a module: `m.f(...)` there is no method call
   by name (local_modules.py), so it does not leave a number guard of a tree method named `f`
   undecided. SGLang's GGUF loader `import gguf; gguf.dequantize(arr, kind)` against
   `NVFP4KVQuantizeUtil.dequantize`'s scalar-scale branch. INVALID twins: the same call on a
   parameter, on a name `from m import x` binds, on a nested function's parameter that hides
   the import: each still a call by name with no record of what it passes.
"""

from __future__ import annotations

from test_lint_scope import lint_package, where

STASH = """
import torch


class Coordinator:
    def __init__(self, device):
        self.device = device

    def _stash(self, rows, tokens):
        if not torch.is_tensor(tokens):
            tokens = torch.tensor(tokens, dtype=torch.int64, device=self.device)
        return rows, tokens
"""

RUNNER = """
import torch
from torch import nn
from pkg.coord import Coordinator


class Model(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.coord = Coordinator(device)

    def forward(self, x: torch.Tensor, rows: torch.Tensor):
        return self.coord._stash(rows, {arg})
"""


def _stash(tmp_path, arg="x[:1]", stash=STASH, **overrides):
    return lint_package(tmp_path, {"coord.py": stash, "runner.py": RUNNER.format(arg=arg)}, **overrides)


def test_not_is_tensor_every_caller_passes_a_tensor_is_cold(tmp_path):
    assert where(_stash(tmp_path)) == []
    run = _stash(tmp_path, include_cold=True)
    assert [(f.site.path, f.site.line, f.code) for f in run.findings] == [("pkg/coord.py", 11, "SYN401")]
    assert "every caller passes a tensor" in run.findings[0].cold


def test_is_tensor_imported_from_torch_is_the_same_guard(tmp_path):
    stash = STASH.replace("import torch\n", "import torch\nfrom torch import is_tensor\n", 1) \
        .replace("torch.is_tensor(tokens)", "is_tensor(tokens)")
    assert where(_stash(tmp_path, stash=stash)) == []


def test_invalid_a_caller_passing_a_list_keeps_the_copy(tmp_path):
    assert ("pkg/coord.py", 11, "SYN401") in where(_stash(tmp_path, arg="[0, 1]"))


def test_invalid_an_is_tensor_of_the_package_is_no_guard(tmp_path):
    stash = STASH.replace("import torch\n", "import torch\nfrom pkg.util import is_tensor\n", 1) \
        .replace("torch.is_tensor(tokens)", "is_tensor(tokens)")
    run = lint_package(tmp_path, {"coord.py": stash, "runner.py": RUNNER.format(arg="x[:1]"),
                                  "util.py": "def is_tensor(x):\n    return hasattr(x, 'shape')\n"})
    assert ("pkg/coord.py", 12, "SYN401") in where(run)


QUANT = """
import torch


class Quant:
    @staticmethod
    def dequantize(packed: torch.Tensor, scale):
        if isinstance(scale, (int, float)):
            scale = torch.tensor([scale], dtype=torch.float32, device=packed.device)
        return packed * scale
"""

MODEL = """
import torch
from torch import nn
from pkg.quant import Quant


class Model(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.scale = torch.ones(1, device=device)

    def forward(self, x: torch.Tensor):
        # a slice of a tensor parameter: the whole-tree guard decides it (a field the tree fills
        # only on the device would decide this call alone, session 17's typeargs.py)
        return Quant.dequantize(x, x[:1])
"""

LOADER = """
def load(weights, kinds):
    {bind}
    for name, tensor in weights:
        yield {call}
"""


def _loader(tmp_path, bind="import extcodec", call="extcodec.dequantize(tensor.numpy(), kinds[name])", **overrides):
    loader = LOADER.format(bind=bind, call=call)
    return lint_package(tmp_path, {"quant.py": QUANT, "model.py": MODEL, "loader.py": loader}, **overrides)


def test_a_call_on_a_locally_imported_module_leaves_the_guard_decided(tmp_path):
    assert where(_loader(tmp_path)) == []
    run = _loader(tmp_path, include_cold=True)
    assert [(f.site.path, f.site.line, f.code) for f in run.findings] == [("pkg/quant.py", 9, "SYN401")]


NESTED = """
def load(weights, kinds):
    import extcodec.core as codec

    def one(tensor, kind{hide}):
        return codec.dequantize(tensor.numpy(), kind)

    for name, tensor in weights:
        yield one(tensor, kinds[name])
"""


def test_a_module_imported_under_another_name_by_the_enclosing_function(tmp_path):
    run = lint_package(tmp_path, {"quant.py": QUANT, "model.py": MODEL, "loader.py": NESTED.format(hide="")})
    assert where(run) == []


def test_invalid_the_same_call_on_a_parameter_keeps_the_copy(tmp_path):
    found = where(_loader(tmp_path, bind="pass", call="kinds.dequantize(tensor.numpy(), name)"))
    assert ("pkg/quant.py", 9, "SYN401") in found


def test_invalid_a_name_from_import_binds_may_be_any_object(tmp_path):
    found = where(_loader(tmp_path, bind="from extcodec import codec",
                          call="codec.dequantize(tensor.numpy(), kinds[name])"))
    assert ("pkg/quant.py", 9, "SYN401") in found


def test_invalid_a_nested_parameter_hides_the_import(tmp_path):
    run = lint_package(tmp_path, {"quant.py": QUANT, "model.py": MODEL, "loader.py": NESTED.format(hide=", codec=None")})
    assert ("pkg/quant.py", 9, "SYN401") in where(run)


UNION = """
import torch
from torch import nn
from pkg.coord import Coordinator


class Model(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.coord = Coordinator(device)

    def forward(self, x: torch.Tensor, rows: torch.Tensor, tokens: {annotation}):
        return self.coord._stash(rows, tokens)
"""


def test_a_parameter_annotated_a_tensor_passed_on_is_a_tensor(tmp_path):
    run = lint_package(tmp_path, {"coord.py": STASH, "runner.py": UNION.format(annotation="torch.Tensor")})
    assert where(run) == []


def test_invalid_a_parameter_whose_annotation_admits_a_number_keeps_the_copy(tmp_path):
    for annotation in ("torch.Tensor | float | int", "Union[torch.Tensor, float]", '"torch.Tensor | int"'):
        runner = UNION.format(annotation=annotation).replace("import torch\n", "import torch\nfrom typing import Union\n", 1)
        run = lint_package(tmp_path, {"coord.py": STASH, "runner.py": runner})
        assert ("pkg/coord.py", 11, "SYN401") in where(run), annotation


def test_invalid_an_optional_tensor_parameter_passed_on_keeps_the_copy(tmp_path):
    runner = UNION.format(annotation="Optional[torch.Tensor]").replace("import torch\n", "import torch\nfrom typing import Optional\n", 1)
    run = lint_package(tmp_path, {"coord.py": STASH, "runner.py": runner})
    assert ("pkg/coord.py", 11, "SYN401") in where(run)


LISTS = STASH.replace("if not torch.is_tensor(tokens):", "if isinstance(tokens, (list, tuple)):")


def test_a_list_test_is_a_guard_every_tensor_argument_rules_out(tmp_path):
    assert where(_stash(tmp_path, stash=LISTS)) == []
    assert ("pkg/coord.py", 11, "SYN401") in where(_stash(tmp_path, arg="[0, 1]", stash=LISTS))


def test_invalid_a_test_admitting_a_tensor_subclass_is_no_guard(tmp_path):
    stash = STASH.replace("if not torch.is_tensor(tokens):", "if isinstance(tokens, (list, Buffer)):") \
        .replace("import torch\n", "import torch\nfrom pkg.buf import Buffer\n", 1)
    run = lint_package(tmp_path, {"coord.py": stash, "runner.py": RUNNER.format(arg="x[:1]"),
                                  "buf.py": "import torch\n\n\nclass Buffer(torch.Tensor):\n    pass\n"})
    assert ("pkg/coord.py", 12, "SYN401") in where(run)


RELAY = """
import torch
from torch import nn
from pkg.coord import Coordinator


class Relay:
    def __init__(self, device):
        self.coord = Coordinator(device)

    def push(self, rows, tokens):
        return self.coord._stash(rows, tokens)


class Model(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.relay = Relay(device)

    def forward(self, x: torch.Tensor, rows: torch.Tensor):
        return self.relay.push(rows, x[:1])
{more}
"""

FEED = """

def feed(relay, rows):
    return relay.push(rows, [1, 2])
"""


def test_a_parameter_passed_on_every_caller_gives_a_tensor(tmp_path):
    assert where(lint_package(tmp_path, {"coord.py": STASH, "runner.py": RELAY.format(more="")})) == []


def test_invalid_a_call_by_name_of_the_passing_method_with_a_list_keeps_the_copy(tmp_path):
    run = lint_package(tmp_path, {"coord.py": STASH, "runner.py": RELAY.format(more=FEED)}, include_cold=True)
    found = [(f.site.path, f.site.line, f.code) for f in run.findings if f.site.path == "pkg/coord.py"]
    assert found == [("pkg/coord.py", 11, "SYN401")]
    assert not run.findings[[f.site.path for f in run.findings].index("pkg/coord.py")].cold
