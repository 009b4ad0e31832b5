"""`--scope` on a class that the program itself defines (`__main__:Class.method`,
`file.py:Class.method`, `-m pkg.mod` with `pkg.mod:Class.method`): the scope applies when the
class is defined, the program runs once and as under plain python, and only the method's syncs
are in scope."""

import builtins
import json
import os
import subprocess
import sys
import textwrap

import pytest

from syncscope.runtime import class_scopes, regions

SCRIPT = """
import torch

class Builder:
    def build(self, x):
        return x.sum().item()          # line 6: in scope

    class Inner:
        def step(self, x):
            return int(x[0])           # line 10

print("top level ran")
x = torch.ones(4, device="cuda")
b = Builder()
print(b.build(x))
print(Builder.Inner().step(x))
x.tolist()                             # line 17: out of scope
"""


def run_traced(tmp_path, *scopes, target=None, module=False, source=SCRIPT):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    run_target = ["-m", "prog"] if module else [target or str(prog)]
    report = tmp_path / "report.json"
    extra = [a for spec in scopes for a in ("--scope", spec)]
    traced = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", str(report), *extra, *run_target],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )
    assert traced.returncode == 0, traced.stderr
    # The program needs a CUDA device, so plain python on this CPU machine cannot run it; its
    # output under the simulated device shows the top level ran once and the methods returned.
    assert traced.stdout == "top level ran\n4.0\n1\n"
    data = json.loads(report.read_text())
    return traced, {(s["line"], s["kind"]): s for s in data["sites"]}


@pytest.mark.parametrize("spec", ["__main__:Builder.build", "prog.py:Builder.build"])
def test_scope_on_a_class_the_script_defines(tmp_path, spec):
    traced, sites = run_traced(tmp_path, spec)
    assert sites[(6, "item")]["in_scope"] and sites[(6, "item")]["regions"] == ["Builder.build"]
    assert not sites[(17, "tolist")]["in_scope"]
    assert not sites[(10, "item")]["in_scope"]
    assert "warning" not in traced.stderr


def test_file_spec_with_a_path_and_a_nested_class(tmp_path):
    traced, sites = run_traced(tmp_path, f"{tmp_path / 'prog.py'}:Builder.Inner.step")
    assert sites[(10, "item")]["in_scope"] and sites[(10, "item")]["regions"] == ["Builder.Inner.step"]
    assert not sites[(6, "item")]["in_scope"]


def test_module_run_with_dash_m_is_scoped_by_its_name_without_a_second_import(tmp_path):
    traced, sites = run_traced(tmp_path, "prog:Builder.build", module=True)
    assert sites[(6, "item")]["in_scope"]
    assert not sites[(17, "tolist")]["in_scope"]


SPAWNING = """
import multiprocessing as mp
import torch

class Builder:
    def build(self, x):
        return x.sum().item()          # line 7: in scope, in the child

def work():
    x = torch.ones(4, device="cuda")
    print(Builder().build(x), flush=True)
    x.tolist()                         # line 12: out of scope

print("top level ran", flush=True)
if __name__ == "__main__":
    child = mp.get_context("spawn").Process(target=work)
    child.start()
    child.join()
"""


def test_a_spawned_child_of_a_dash_m_run_scopes_the_module_without_importing_it_again(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(SPAWNING))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    traced = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", str(tmp_path / "report.json"),
         "--scope", "prog:Builder.build", "-m", "prog"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )
    assert traced.returncode == 0, traced.stderr
    # As under plain python: the parent runs the top level, the spawned child runs it again as
    # `__mp_main__`; a third line would be the child importing `prog` a second time for the scope.
    assert traced.stdout == "top level ran\ntop level ran\n4.0\n", traced.stdout
    children = [p for p in tmp_path.glob("report.*.json")]
    assert len(children) == 1, sorted(os.listdir(tmp_path))
    sites = {(s["line"], s["kind"]): s for s in json.loads(children[0].read_text())["sites"]}
    assert sites[(7, "item")]["in_scope"] and sites[(7, "item")]["regions"] == ["Builder.build"]
    assert not sites[(12, "tolist")]["in_scope"]


def test_a_scope_that_matches_no_class_is_an_error_before_the_program_starts(tmp_path):
    """Issue 28: a scope that matches nothing would report every sync as out of scope. The
    script's source says there is no such class, or no such method: exit 2, nothing runs."""
    (tmp_path / "prog.py").write_text(textwrap.dedent(SCRIPT))
    for spec, message in (("__main__:Missing.build", "prog.py defines no class 'Missing'"),
                          ("__main__:Builder.nope", "class Builder in prog.py has no method 'nope'")):
        proc = subprocess.run(
            [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "--scope", spec, "prog.py"],
            capture_output=True, text=True, cwd=tmp_path, timeout=120,
        )
        assert proc.returncode == 2 and proc.stdout == ""
        assert proc.stderr.splitlines() == [f"syncscope: error: --scope {spec}: {message}"], proc.stderr


@pytest.mark.parametrize(
    "spec,message",
    [("missing_file.py:A.b", "no such file"), ("__main__:function", "cannot be scoped before it exists")],
)
def test_bad_deferred_specs_are_one_error_line(tmp_path, spec, message):
    (tmp_path / "prog.py").write_text("print('hi')\n")
    proc = subprocess.run(
        [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--scope", spec, "prog.py"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert "hi" not in proc.stdout


def test_class_definitions_are_hooked_only_while_a_scope_waits_and_undo_restores_the_method():
    original_build_class = builtins.__build_class__
    declared = regions.scope_declared()
    matcher = class_scopes.deferred_target("__main__:Later.run", None)
    undo = class_scopes.scope_when_defined("__main__:Later.run", matcher, regions.scope_attribute)
    try:
        assert builtins.__build_class__ is not original_build_class
        namespace = {"__name__": "__main__"}
        exec("class Later:\n    def run(self):\n        from syncscope.runtime import regions\n        return regions.current_region()\n", namespace)
        later = namespace["Later"]
        assert later().run() == "Later.run"
        other = {"__name__": "some.module"}  # same class name, another module: left alone
        exec("class Later:\n    def run(self):\n        return None\n", other)
        assert other["Later"].__dict__["run"].__name__ == "run" and not hasattr(other["Later"].run, "__wrapped__")
    finally:
        undo()
        regions.trap_state().declared = declared
    assert builtins.__build_class__ is original_build_class
    assert later().run() is None  # unwrapped again: no region
