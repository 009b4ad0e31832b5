"""One line per sync, whoever reports it: the GPU detector and the simulated device take the site
from the same helper (syncscope/runtime/user_frames.py), and it gives Python 3.12's line (the GPU
suite's Python) on every Python. The forms are in tests/line_forms.py, each sync line marked.

- on a stand-in tensor (no torch): the helper gives the marked lines here, and under every other
  Python 3.11+ found on the machine; there, 3.12's own `f_lineno` gives them too (so the marks are
  3.12's lines, not ours);
- under the simulated device: each form reports exactly its marked (line, kind) pairs;
- gpu-marked: the same forms under `syncscope.trap(device="cuda")`, the same pairs;
- a sync past a `torch.compile` graph break has the site eager code has (resume functions).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from syncscope.runtime import user_frames
from tests import line_forms, line_forms_probe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMS_FILE = "tests/line_forms.py"
PURE_FORMS = [f for f in line_forms.FORMS if f.__name__ not in line_forms.TORCH_ONLY]

# The enclosing function a form's site must name, where it is not the form itself.
FUNCTIONS = {
    "form_generator_consumed_elsewhere": "form_generator_consumed_elsewhere.<locals>.<genexpr>",
    "form_lambda_over_lines": "form_lambda_over_lines.<locals>.<lambda>",
    "form_no_grad_decorated": "form_no_grad_decorated.<locals>.inner",
    "form_compiled_function": "_compiled_step.<locals>.step",
}


def _function(form) -> str:
    return FUNCTIONS.get(form.__name__, form.__name__)


# -- the helper, without torch --------------------------------------------------------------------
def test_the_forms_mark_at_least_one_sync_each():
    assert len(line_forms.FORMS) >= 30
    for form in line_forms.FORMS:
        assert line_forms.expected_for(form), form.__name__


@pytest.mark.parametrize("form", PURE_FORMS, ids=lambda f: f.__name__)
def test_helper_gives_the_marked_line_on_this_python(form):
    result = line_forms_probe.probe()[form.__name__]
    assert [line for line, _ in result["helper"]] == result["expected"]
    assert {function for _, function in result["helper"]} == {_function(form)}
    if sys.version_info[:2] == (3, 12):  # the marks are 3.12's own lines (the GPU suite's Python)
        assert sorted({line for line, _ in result["raw"]}) == result["expected"]


def _other_pythons() -> list[str]:
    """Interpreters of other minor versions on this machine (pyenv's, or on PATH)."""
    found = {}
    candidates = glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[1-9]*/bin/python3"))
    candidates += [shutil.which(f"python3.{minor}") or "" for minor in range(11, 20)]
    for path in candidates:
        if not path or not os.access(path, os.X_OK):
            continue
        try:
            version = subprocess.run(
                [path, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], capture_output=True, text=True, timeout=30
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            continue
        if version and version != "%d.%d" % sys.version_info[:2]:
            found.setdefault(version, path)
    return [found[v] for v in sorted(found)]


def test_helper_gives_the_marked_lines_on_other_pythons_and_they_are_312s_own():
    pythons = _other_pythons()
    if not pythons:
        pytest.skip("no other Python 3.11+ on this machine")
    seen_312 = False
    for python in pythons:
        out = subprocess.run(
            [python, os.path.join(ROOT, "tests", "line_forms_probe.py")],
            capture_output=True, text=True, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
        )
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        for name, result in report["forms"].items():
            assert [line for line, _ in result["helper"]] == result["expected"], (python, name)
            if report["python"] == [3, 12]:
                seen_312 = True
                # the marks are what 3.12 itself says: no correction of ours is in them
                assert sorted({line for line, _ in result["raw"]}) == result["expected"], name
    if sys.version_info[:2] != (3, 12) and not seen_312:
        pytest.skip("no Python 3.12 here to check the marks against (the other Pythons passed)")


def test_function_names_follow_312_eager_code():
    names = {
        "f.<locals>.<listcomp>": "f",
        "C.m.<locals>.<listcomp>.<listcomp>": "C.m",
        "C.<setcomp>": "C",
        "<dictcomp>": "<module>",
        "f.<locals>.<genexpr>": "f.<locals>.<genexpr>",
        "f.<locals>.<lambda>": "f.<locals>.<lambda>",
        "torch_dynamo_resume_in_step_at_12": "step",
        "Model.torch_dynamo_resume_in_forward_at_30": "Model.forward",
        "outer.<locals>.torch_dynamo_resume_in_inner_at_5": "outer.<locals>.inner",
    }

    class Code:
        def __init__(self, qualname):
            self.co_qualname = qualname
            self.co_name = qualname.rsplit(".", 1)[-1]

    assert {q: user_frames.function_name(Code(q)) for q in names} == names


# -- torch.compile's resume functions (CPU, real Dynamo) -------------------------------------------
def test_a_sync_past_a_graph_break_has_the_eager_site():
    torch = pytest.importorskip("torch")
    from syncscope.runtime.recorder import Recorder

    recorder = Recorder(root=ROOT)
    seen: list = []

    @torch._dynamo.disable
    def read(v):  # stands for a sync: Dynamo breaks the graph here and runs it eagerly
        seen.append(recorder.user_stack(sys._getframe(1))[:2])
        return v

    def body(v):
        w = v * 2
        read(w)
        u = w + 1
        values = [
            read(a)
            for a in u
        ]
        return u, values

    def run(fn) -> list:
        seen.clear()
        fn(torch.ones(2))
        return list(seen)

    eager = run(body)
    compiled_fn = torch.compile(body, backend="eager")
    run(compiled_fn)  # compiles
    compiled = run(compiled_fn)
    assert [stack[0].function for stack in eager] == ["test_a_sync_past_a_graph_break_has_the_eager_site.<locals>.body"] * 3
    assert compiled == eager


def test_cuda_shims_run_their_own_code_after_a_graph_break():
    """The GPU detector's shims are Python functions torch.compile inlines; after a graph break at
    one (`.item()`), the unmarked stand-in's frame is compiled anew, its `is_compiling()` branch
    taken, and the sync would reach the detector unnamed. Marked as cuda.py marks its shims, the
    shim runs as eager code and names it (CPU, real Dynamo)."""
    torch = pytest.importorskip("torch")
    from syncscope.runtime.cuda import _run_as_eager_code

    original = torch.Tensor.item
    named: list = []

    def unmarked_shim(self):
        if torch.compiler.is_compiling():
            return original(self)
        named.append("unmarked")
        return original(self)

    def marked_shim(self):
        if torch.compiler.is_compiling():
            return original(self)
        named.append("marked")
        return original(self)

    _run_as_eager_code(marked_shim)

    def body(v):
        return (v * 2).sum().item() + 1

    try:
        for shim in (unmarked_shim, marked_shim):
            torch._dynamo.reset()
            torch.Tensor.item = shim
            compiled = torch.compile(body, backend="eager")
            assert compiled(torch.ones(2)) == 5.0 and compiled(torch.ones(2)) == 5.0
    finally:
        torch.Tensor.item = original
        torch._dynamo.reset()
    assert named == ["marked", "marked"]


# -- the simulated device ------------------------------------------------------------------------
def _tensors(device: str):
    import torch

    class T:
        x = torch.tensor(2.0, device=device)
        y = torch.tensor(3.0, device=device)
        i = torch.tensor(2, device=device)
        ok = torch.tensor(True, device=device)
        v = torch.tensor([1.0, 2.0], device=device)

    return T


def _pairs(events) -> set[tuple[int, str]]:
    return {(e.site.line, e.kind) for e in events if e.site.path.replace(os.sep, "/").endswith(FORMS_FILE)}


def _functions(events) -> set[str]:
    return {e.site.function for e in events if e.site.path.replace(os.sep, "/").endswith(FORMS_FILE)}


@pytest.mark.parametrize("form", line_forms.FORMS, ids=lambda f: f.__name__)
def test_simulated_device_reports_the_marked_lines(form):
    pytest.importorskip("torch")
    import syncscope

    with syncscope.trap(device="sim", root=ROOT) as trap:
        line_forms.prepare_compiled()  # torch.compile runs eagerly on the simulated device
        tensors = _tensors("cuda")
        form(tensors)
    assert _pairs(trap.events) == line_forms.expected_for(form)
    assert _functions(trap.events) == {_function(form)}


def test_simulated_device_names_a_refused_sync_in_a_capture_at_its_line():
    pytest.importorskip("torch")
    import torch

    import syncscope

    form = line_forms.capture_bare_tensor_over_lines
    with syncscope.trap(device="sim", root=ROOT) as trap:
        tensors = _tensors("cuda")
        with pytest.raises(RuntimeError, match="capturing"):
            form(tensors, torch.cuda.CUDAGraph())
    mine = [e for e in trap.events if e.site.path.replace(os.sep, "/").endswith(FORMS_FILE)]
    assert _pairs(mine) == line_forms.expected(form)
    refused = [e for e in mine if e.kind == "sync_in_capture"]
    assert {e.related.line for e in refused if e.related} == {line_forms.related_line(form, "capture")}


def test_simulated_device_names_both_lines_of_a_hazard():
    pytest.importorskip("torch")
    import syncscope

    form = line_forms.hazard_read_in_fstring_over_lines
    with syncscope.trap(device="sim", root=ROOT) as trap:
        form(_tensors("cuda"))
    mine = [e for e in trap.events if e.site.path.replace(os.sep, "/").endswith(FORMS_FILE)]
    assert _pairs(mine) == line_forms.expected(form)
    assert {e.related.line for e in mine} == {line_forms.related_line(form, "copy")}


# -- the same on a GPU ----------------------------------------------------------------------------
@pytest.mark.gpu
def test_gpu_detector_reports_the_marked_lines_of_every_form():
    import torch

    import syncscope

    tensors = _tensors("cuda")
    line_forms.prepare_compiled()
    line_forms.form_compiled_function(tensors)  # compiles outside the trap
    torch.cuda.synchronize()
    got, want, functions = {}, {}, {}
    for form in line_forms.FORMS:
        with syncscope.trap(device="cuda", root=ROOT) as trap:
            form(tensors)  # once more in the trap: a recompilation (and its own syncs) happens here
            warm = len(trap.events)
            form(tensors)
        measured = trap.events[warm:]
        got[form.__name__] = sorted(_pairs(measured))
        want[form.__name__] = sorted(line_forms.expected_for(form))
        functions[form.__name__] = _functions(measured) == {_function(form)}
    assert got == want
    assert all(functions.values()), [name for name, ok in functions.items() if not ok]


_REFUSED_CAPTURE_CHILD = """
import json, os, sys
import pytest, torch
import syncscope
from tests import line_forms
from tests.test_line_attribution import FORMS_FILE, ROOT, _pairs, _tensors

form = line_forms.capture_bare_tensor_over_lines
tensors = _tensors("cuda")
torch.cuda.synchronize()
with syncscope.trap(device="cuda", root=ROOT) as trap:
    with pytest.raises(RuntimeError):
        form(tensors, torch.cuda.CUDAGraph())
mine = [e for e in trap.events if e.site.path.replace(os.sep, "/").endswith(FORMS_FILE)]
print(json.dumps({"pairs": sorted(_pairs(mine)),
                  "related": sorted({e.related.line for e in mine if e.kind == "sync_in_capture" and e.related})}))
"""


@pytest.mark.gpu
def test_gpu_detector_names_a_refused_sync_in_a_capture_at_its_line():
    # In a child process: after a capture CUDA refused, the process's CUDA generator stays in
    # capture state, and every later GPU test in the pytest process failed with "Offset increment
    # outside graph capture" (seen on the H100, torch 2.11).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, "-c", _REFUSED_CAPTURE_CHILD], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    form = line_forms.capture_bare_tensor_over_lines
    assert {tuple(p) for p in result["pairs"]} == line_forms.expected(form)
    assert result["related"] == [line_forms.related_line(form, "capture")]
