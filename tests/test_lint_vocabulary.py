"""The linter's shared vocabulary: both walks (libcst rules, `ast` facts) read type annotations,
device arguments and torch factories the same way, and places have two orders that say which
they are."""

import ast

import libcst as cst
import pytest

from syncscope.lint import provenance as P
from syncscope.lint.evaluate import annotation_where
from syncscope.lint.ast_annotations import annotation_shape
from syncscope.lint.records import FileFinding, diagnostic
from syncscope.lint.vocabulary import annotation_place, factory_place, literal_device_place, named_device_place

ANNOTATIONS = [
    ("torch.Tensor", P.TENSOR, ""),
    ("Optional[torch.Tensor]", P.TENSOR, ""),
    ("torch.Tensor | None", P.TENSOR, ""),
    ("'torch.Tensor'", P.TENSOR, ""),
    ("Annotated[torch.Tensor, 'meta']", P.TENSOR, ""),
    ("np.ndarray", P.HOST, ""),
    ("npt.NDArray[np.int32]", P.HOST, ""),
    ("list[torch.Tensor]", P.PY, ""),
    ("int", P.PY, ""),
    ("Optional[int]", P.PY, ""),
    ("int | None", P.PY, ""),
    ("CommonAttentionMetadata", None, "CommonAttentionMetadata"),
    ("Optional[Runner]", None, "Runner"),
    ("torch.Tensor | np.ndarray", P.TENSOR, ""),
    # `Any` says nothing: it may hold a device tensor (not a Python value, not a class).
    ("Any", None, ""),
    ("typing.Any", None, ""),
    ("Optional[Any]", None, ""),
    ("object", None, ""),
]


@pytest.mark.parametrize("text,where,name", ANNOTATIONS)
def test_both_walks_read_an_annotation_alike(text, where, name):
    assert annotation_where(cst.parse_expression(text)) == (where, name)
    assert annotation_place(ast.parse(text, mode="eval").body, annotation_shape) == (where, name)


def test_paths_and_operands_rank_places_differently():
    # a name that is host data on one path and unknown on the other may be anything: unknown
    assert P.join(P.HOST, P.UNKNOWN) == P.UNKNOWN
    # a host tensor in an operation says the other operand is on the host too
    assert P.combine(P.HOST, P.UNKNOWN) == P.HOST
    assert P.combine(P.HOST, P.TENSOR) == P.HOST
    assert P.join(P.HOST, P.DEVICE) == P.combine(P.HOST, P.DEVICE) == P.DEVICE
    assert P.join() == P.combine() == P.PY
    assert [w for w in P.Place if P.known_host(w)] == [P.PY, P.HOST]
    assert [w for w in P.Place if P.maybe_device(w)] == [P.UNKNOWN, P.TENSOR, P.DEVICE]
    assert [w for w in P.Place if P.device_unknown(w)] == [P.UNKNOWN, P.TENSOR]
    assert [w for w in P.Place if P.is_tensor_like(w)] == [P.TENSOR, P.DEVICE]


def test_device_words():
    assert literal_device_place("cpu") == literal_device_place("CPU:0") == P.HOST
    assert literal_device_place("cuda:1") == literal_device_place("xpu") == P.DEVICE
    assert literal_device_place("float16") is None
    host = frozenset({"cpu", "np", "host"})
    assert named_device_place("self.device", host) == P.DEVICE
    assert named_device_place("cpu_device", host) == P.HOST
    assert named_device_place("self.dtype", host) is None
    assert named_device_place("other", host) is None


def test_factories_follow_device_then_argument():
    assert factory_place("zeros", None, P.PY) == P.HOST
    assert factory_place("zeros", P.DEVICE, P.PY) == P.DEVICE
    assert factory_place("zeros_like", None, P.DEVICE) == P.DEVICE
    assert factory_place("as_tensor", None, P.PY) == P.HOST
    assert factory_place("as_tensor", None, P.TENSOR) == P.TENSOR


def test_a_diagnostic_is_a_finding_on_one_line_of_the_module():
    found = diagnostic("SYN002", "syntax error: x", 7, 3)
    assert isinstance(found, FileFinding)
    assert (found.code, found.line, found.column, found.stmt_start, found.stmt_end, found.function) == \
        ("SYN002", 7, 3, 7, 7, "<module>")
    assert (found.fix, found.level, found.chain, found.param) == (None, "error", (), None)


def test_cast_is_its_argument_in_both_walks(tmp_path):
    from lint_helpers import lint_source

    source = (
        "import typing\nimport torch\n"
        "def step(lens: torch.Tensor):\n    lens = typing.cast(torch.Tensor, lens)\n    return lens.item()\n"
        "def helper(x):\n    return x.item()\n"
        "def on_device(lens_gpu):\n    return helper(typing.cast(torch.Tensor, lens_gpu))\n"
        "def on_host(lens_cpu):\n    return helper(typing.cast(torch.Tensor, lens_cpu))\n"
    )
    found = sorted((f.code, f.site.line) for f in lint_source(tmp_path, source).findings)
    # the rules see `.item()` on the cast tensor (line 5); the whole-program pass sees the
    # device value go through the cast into a helper that syncs on it (line 9), not the host one
    assert found == [("SYN201", 5), ("SYN201", 7), ("SYN601", 9)]
