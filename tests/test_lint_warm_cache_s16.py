"""A rerun on a warm cache reports what the cold run reported (session 16).

The engine walks again the files that read carrier objects' host attributes (carrier_fields.py),
with the attributes it works out from every module's imports. A result the cache holds is kept
without the facts only the whole-program pass reads, the imports among them, so a warm run found
no module importing a carrier class, walked those files again without their host attributes and
reported their reads as syncs: SGLang 0.5.23 gave 4,981 findings warm against 4,957 cold. What the
engine reads of the imports now stays with the cached result.
"""

from __future__ import annotations

import textwrap

from syncscope.lint.engine import lint_paths
from test_lint_carrier_fields_s9 import BUILD, HOLDER_MODEL, ITEMS, MODEL, SCHEDULE
from test_lint_host_facts import make_config


def package(tmp_path, move: str) -> str:
    root = tmp_path / "pkg"
    root.mkdir(exist_ok=True)
    (root / "__init__.py").write_text("")
    files = {"items.py": ITEMS, "build.py": BUILD, "schedule.py": SCHEDULE.replace("MOVE", move),
             "model.py": MODEL, "holder.py": HOLDER_MODEL}
    for name, source in files.items():
        (root / name).write_text(textwrap.dedent(source))
    return str(root)


def found(tmp_path, root: str, use_cache: bool) -> list[tuple]:
    run = lint_paths([root], make_config(tmp_path, include_cold=True), use_cache=use_cache, jobs=1)
    return sorted((f.site.path, f.site.line, f.code, f.message, f.cold) for f in run.findings)


def test_a_warm_rerun_keeps_the_carriers_host_attributes(tmp_path):
    # VALID: `grid` is never moved to the device, so the model's reads of it are host reads,
    # on the cold run, on a rerun from the cache, and without a cache
    root = package(tmp_path, "to(device, non_blocking=True)")
    cold = found(tmp_path, root, use_cache=True)
    assert not [f for f in cold if f[0] in ("pkg/model.py", "pkg/holder.py")]
    assert found(tmp_path, root, use_cache=True) == cold
    assert found(tmp_path, root, use_cache=False) == cold


def test_a_warm_rerun_keeps_what_nothing_decides(tmp_path):
    # INVALID twin: nothing moves the objects' fields, so the reads stay reported, warm as cold
    root = package(tmp_path, "float()")
    cold = found(tmp_path, root, use_cache=True)
    assert sorted({f[1] for f in cold if f[0] == "pkg/model.py"}) == [8, 24]
    assert found(tmp_path, root, use_cache=True) == cold


def test_an_edit_that_only_moves_lines_of_a_file_importing_a_class_reuses_the_pass(tmp_path, monkeypatch):
    # VALID: the cached result keeps the class names its file imports, a fresh one reads them
    # from its facts; a comment appended to a file that imports a class (`Bundle`) moves lines
    # only, so the whole-program pass is not run again and the report is the whole run's
    from syncscope.lint import engine

    root = package(tmp_path, "to(device, non_blocking=True)")
    found(tmp_path, root, use_cache=True)
    model = tmp_path / "pkg" / "model.py"
    model.write_text(model.read_text() + "\n# an edit that moves nothing\n")
    solves = []
    real = engine.solve
    monkeypatch.setattr(engine, "solve", lambda *a, **k: solves.append(1) or real(*a, **k))
    warm = found(tmp_path, root, use_cache=True)
    assert solves == []
    monkeypatch.undo()
    assert warm == found(tmp_path, root, use_cache=False)
