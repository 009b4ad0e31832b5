"""Statements whose sync line is easy to get wrong: each `form_*` function syncs on the lines marked
`# sync: KIND`, and a detector must report exactly those (line, kind) pairs. The marked line is
the line of the call that syncs as Python 3.12 reports it (the GPU suite's Python):
tests/test_line_attribution.py checks that 3.12's own line table says so, that syncscope's line
helper gives the same lines on the Python it runs on, and that the simulated device and the GPU
detector report them.

`t` holds the tensors: `x` a 0-d float, `y` a 0-d float, `i` a 0-d long, `ok` a 0-d bool (True),
`v` a 1-d float vector, all on the device. Forms marked `@torch_only` use the torch namespace; the others also run on the
pure-Python stand-in of tests/line_forms_probe.py (no torch needed, any Python 3.11+).
No torch import at module level: the probe runs this file under interpreters without torch.
"""

from __future__ import annotations

import inspect
import re

TORCH_ONLY: set[str] = set()
_MARK = re.compile(r"#.*\bsync:\s*(\w+(?:\s*,\s*\w+)*)\s*$")  # one kind, or several: "sync: item, h2d_copy"


def torch_only(fn):
    TORCH_ONLY.add(fn.__name__)
    return fn


def expected(fn) -> set[tuple[int, str]]:
    """(line, kind) of every `# sync: KIND` marker in `fn`'s source."""
    lines, first = inspect.getsourcelines(fn)
    return {
        (first + n, kind.strip()) for n, text in enumerate(lines) if (m := _MARK.search(text)) for kind in m.group(1).split(",")
    }


def _pass(*args, **kwargs):
    return args


class _Ctx:
    def __init__(self, *args):
        self.args = args

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _decorate(value):
    def decorator(fn):
        return fn

    return decorator


# -- calls spread over lines ----------------------------------------------------------------------
def form_chained_method_call(t):
    n = (t.v
         .sum()
         .item())  # sync: item
    return n


def form_call_arguments_over_lines(t):
    return _pass(
        t.x.item(),  # sync: item
        t.y.item(),  # sync: item
    )


def form_keyword_argument(t):
    return _pass(1,
                 b=t.x.item())  # sync: item


def form_int_over_lines(t):
    return int(  # sync: item
        t.x
    )


def form_float_over_lines(t):
    return float(  # sync: item
        t.x)


# -- implicit conversions -------------------------------------------------------------------------
def form_if_condition_over_lines(t):
    n = 1
    if (n == 1 and
            t.x > 0):  # sync: item
        return True
    return False


def form_while_condition_over_lines(t):
    rounds = 0
    while not (
        t.x < 0  # sync: item
    ):
        rounds += 1
        if rounds == 2:
            break
    return rounds


def form_assert_over_lines(t):
    assert (
        t.x > -1  # sync: item
    )


def form_ternary_over_lines(t):
    return (1
            if t.x > 0  # sync: item
            else 2)


def form_if_bare_tensor_over_lines(t):
    n = 1
    if (n == 1 and
            t.ok):  # sync: item
        return True
    return False


def form_if_method_result_over_lines(t):
    if (t.ok  # sync: item
            .all()):
        return True
    return False


def form_while_bare_tensor_over_lines(t):
    rounds = 0
    while (
        t.ok  # sync: item
    ):
        rounds += 1
        if rounds == 2:
            break
    return rounds


def form_assert_bare_tensor_over_lines(t):
    assert (
        t.ok  # sync: item
    )


def form_ternary_bare_tensor_over_lines(t):
    return (1
            if t.ok  # sync: item
            else 2)


def form_boolean_operator_over_lines(t):
    return (t.ok and  # sync: item
            t.ok)


def form_index_over_lines(t):
    return [10, 20, 30][  # sync: item
        t.i]


def form_range_over_lines(t):
    total = 0
    for k in range(  # sync: item
            t.i):
        total += k
    return total


def form_fstring_implicit_concatenation(t):
    return (
        "loss "
        f"{t.x:.3f} "  # sync: item
        "done"
    )


def form_fstring_triple_quoted(t):
    return f"""step
value {t.x}"""  # sync: item


def form_print_fstring_over_lines(t):
    return _pass(
        f"a={1} "
        f"x={t.x:.2f}",  # sync: item
        sep="",
    )


# -- comprehensions, generators, lambdas ----------------------------------------------------------
def form_comprehension_condition(t):
    return [
        a
        for a in t.v
        if a > 0  # sync: item
    ]


def form_comprehension_element(t):
    return {
        k: a.item()  # sync: item
        for k, a in enumerate(t.v)
    }


def form_generator_consumed_elsewhere(t):
    values = (a.item()  # sync: item
              for a in t.v)
    total = sum(
        values)
    return total


def form_lambda_over_lines(t):
    read = lambda: (  # noqa: E731
        t.x.item())  # sync: item
    return read()


# -- headers: with, default arguments, decorators -------------------------------------------------
def form_with_header(t):
    with _Ctx(
        t.x.item()  # sync: item
    ):
        pass


def form_default_argument(t):
    def inner(a=1,
              b=t.x.item()):  # sync: item
        return a + b

    return inner()


def form_decorator_argument(t):
    @_decorate(
        t.x.item())  # sync: item
    def inner():
        return 1

    return inner()


# -- torch entry points (simulated device or GPU only) --------------------------------------------
@torch_only
def form_nonzero_over_lines(t):
    import torch

    return torch.nonzero(  # sync: nonzero
        t.v > 0
    )


@torch_only
def form_mask_index_over_lines(t):
    return t.v[  # sync: bool_mask_index
        t.v > 0
    ]


@torch_only
def form_tensor_of_device_scalars(t):
    import torch

    # Each value is read on the host, then the tensor is copied up: two kinds at one line (H100).
    return torch.tensor(  # sync: item, h2d_copy
        [t.x,
         t.y],
        device="cuda",
    )


@torch_only
def form_no_grad_decorated(t):
    import torch

    @torch.no_grad()
    def inner(v):
        return (v * 2).sum().item()  # sync: item

    return inner(t.v)


@torch_only
def form_cpu_copy_over_lines(t):
    return (t.v
            .cpu())  # sync: cpu_copy


def _compiled_step():
    import torch

    @torch.compile
    def step(v):
        w = v * 2
        n = (w
             .sum()
             .item())  # sync: item
        return w + n

    return step


@torch_only
def form_compiled_function(t):
    return _COMPILED(t.v)


def compiled_form_lines() -> set[tuple[int, str]]:
    return expected(_compiled_step)


_COMPILED = None


def prepare_compiled() -> None:
    """Build the compiled function once (outside any trap: the GPU compiles it on first call)."""
    global _COMPILED
    _COMPILED = _compiled_step()


# -- a sync inside a CUDA graph capture, a hazard (not in FORMS: each has its own harness) --------
def capture_bare_tensor_over_lines(t, graph):
    """Raises (the GPU refuses a sync while capturing); the site is the refused call's line."""
    import torch

    n = 1
    with torch.cuda.graph(graph):  # related: capture; entering it synchronizes: sync: device_sync
        y = t.v * 2
        if (n == 1 and
                t.ok):  # sync: sync_in_capture
            y += 1
    return y


def hazard_read_in_fstring_over_lines(t):
    """A non_blocking device->host copy read before any sync (the simulated device's hazard)."""
    host = (t.v
            .to("cpu", non_blocking=True))  # related: copy
    return (
        "first "
        f"{host[0]:.1f}"  # sync: unsynced_d2h_read
    )


def related_line(fn, name: str) -> int:
    lines, first = inspect.getsourcelines(fn)
    (line,) = [first + n for n, text in enumerate(lines) if f"# related: {name}" in text]
    return line


FORMS = [
    value for name, value in sorted(globals().items()) if name.startswith("form_") and callable(value)
]


def expected_for(fn) -> set[tuple[int, str]]:
    return compiled_form_lines() if fn.__name__ == "form_compiled_function" else expected(fn)
