"""Fingerprints and baselines: a site keeps its identity across unrelated edits, for runtime
reports and lint output alike."""

from __future__ import annotations

import json

import pytest

from syncscope.ci import baseline as bl
from syncscope.ci import gate
from test_gate_support import lint_output, runtime_report, write

BEFORE = '''\
import torch


def helper(x):
    return x + 1


class Builder:
    def build(self, lens):
        total = lens.sum().item()
        return total
'''

LINES_ABOVE = '''\
import torch
import os  # a new import
# and a comment block
# that pushes everything down


def helper(x):
    return x + 1


class Builder:
    def build(self, lens):
        total = lens.sum().item()
        return total
'''

RENAMED_UNRELATED = BEFORE.replace("def helper(", "def add_one(")

MOVED = '''\
import torch


class Builder:
    def build(self, lens):
        lens = lens.clamp(min=0)
        if lens.numel():
            pass
        total   =  lens.sum().item()   # moved down, reformatted, commented
        return total


def helper(x):
    return x + 1
'''

IDENTICAL_ELSEWHERE = BEFORE + '''

def other(lens):
    total = lens.sum().item()
    return total
'''

IDENTICAL_SAME_FUNCTION = '''\
import torch


def helper(x):
    return x + 1


class Builder:
    def build(self, lens):
        total = lens.sum().item()
        again = 1
        total = lens.sum().item()
        return total
'''

MAKERS = {"runtime": runtime_report, "lint": lint_output}


def fingerprints(kind: str, source: str, tmp_path, name: str) -> set[str]:
    path = write(tmp_path, name, MAKERS[kind](source))
    return {o.fingerprint for o in bl.load_observation(path).sites}


@pytest.fixture(params=["runtime", "lint"])
def origin(request):
    return request.param


def test_inserting_lines_above_keeps_the_fingerprint(origin, tmp_path):
    assert fingerprints(origin, BEFORE, tmp_path, "a.json") == fingerprints(origin, LINES_ABOVE, tmp_path, "b.json")


def test_renaming_an_unrelated_function_keeps_the_fingerprint(origin, tmp_path):
    assert fingerprints(origin, BEFORE, tmp_path, "a.json") == fingerprints(origin, RENAMED_UNRELATED, tmp_path, "b.json")


def test_a_moved_and_reformatted_site_is_the_same_site(origin, tmp_path):
    assert fingerprints(origin, BEFORE, tmp_path, "a.json") == fingerprints(origin, MOVED, tmp_path, "b.json")


def test_an_identical_line_in_another_function_is_a_new_site(origin, tmp_path):
    before = fingerprints(origin, BEFORE, tmp_path, "a.json")
    after = fingerprints(origin, IDENTICAL_ELSEWHERE, tmp_path, "b.json")
    assert before < after and len(after - before) == 1


def test_an_identical_line_in_the_same_function_is_a_new_site(origin, tmp_path):
    before = fingerprints(origin, BEFORE, tmp_path, "a.json")
    after = fingerprints(origin, IDENTICAL_SAME_FUNCTION, tmp_path, "b.json")
    assert before < after and len(after - before) == 1


def test_runtime_and_lint_use_the_one_site_fingerprint(tmp_path):
    """Both sides go through syncscope.site: the same Site fields give the same fingerprint."""
    from syncscope.site import Site

    runtime = bl.load_observation(write(tmp_path, "r.json", runtime_report(BEFORE))).sites[0]
    lint = bl.load_observation(write(tmp_path, "l.json", lint_output(BEFORE))).sites[0]
    assert runtime.site.function == lint.site.function == "Builder.build"
    assert runtime.fingerprint == Site("model.py", 99, "Builder.build", "item", "total = lens.sum().item()").fingerprint()
    assert lint.fingerprint == Site("model.py", 1, "Builder.build", "SYN401", "total = lens.sum().item()").fingerprint()


def test_out_of_scope_and_allowed_runtime_sites_are_not_gated(tmp_path):
    data = runtime_report(BEFORE, in_scope=False)
    assert bl.load_observation(write(tmp_path, "r.json", data)).sites == ()
    data = runtime_report(BEFORE)
    data["sites"][0]["allowed"] = True
    assert bl.load_observation(write(tmp_path, "r.json", data)).sites == ()


def test_create_save_load_roundtrip(tmp_path):
    observation = bl.load_observation(write(tmp_path, "r.json", runtime_report(IDENTICAL_ELSEWHERE)))
    created = bl.create(observation)
    path = str(tmp_path / "baseline.json")
    bl.save_baseline(created, path)
    loaded = bl.load_baseline(path)
    assert loaded.origin == "runtime"
    assert loaded.fingerprints() == {o.fingerprint for o in observation.sites}
    on_disk = json.loads(open(path).read())
    assert on_disk["schema"] == "syncscope.baseline" and {"path", "line", "function", "kind", "source"} <= set(on_disk["sites"][0])


def test_budgets_need_steps(tmp_path):
    observation = bl.load_observation(write(tmp_path, "r.json", runtime_report(BEFORE, counts={10: 8})))
    with pytest.raises(bl.InputError, match="--steps"):
        bl.create(observation, budget_slack=1.0)
    created = bl.create(observation, budget_slack=1.5, steps=4)
    assert created.entries[0].max_per_step == 3.0  # 8 events / 4 steps * 1.5
    lint = bl.load_observation(write(tmp_path, "l.json", lint_output(BEFORE)))
    with pytest.raises(bl.InputError, match="runtime"):
        bl.create(lint, budget_slack=1.0, steps=4)


def test_shrink_never_adds(tmp_path):
    observation = bl.load_observation(write(tmp_path, "r.json", runtime_report(BEFORE)))
    created = bl.create(observation)
    assert bl.shrink(created, ["not-a-known-fingerprint"]).entries == ()
    assert bl.shrink(created, [created.entries[0].fingerprint, "brand-new"]).entries == created.entries


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not valid JSON"),
        ('{"schema": "syncscope.baseline", "version": 99, "origin": "runtime", "sites": []}', "version"),
        ('{"schema": "syncscope.baseline", "version": 1, "origin": "runtime", "sites": [{"kind": "item"}]}', "site #0 is malformed"),
        ('{"schema": "syncscope.baseline", "version": 1, "origin": "elsewhere", "sites": []}', "origin"),
        ('[1, 2]', "not a syncscope baseline"),
    ],
)
def test_malformed_baselines_are_refused_clearly(tmp_path, content, message):
    path = tmp_path / "baseline.json"
    path.write_text(content)
    with pytest.raises(bl.InputError, match=message):
        bl.load_baseline(str(path))


def test_origin_mismatch_is_an_input_error(tmp_path):
    lint = bl.load_observation(write(tmp_path, "l.json", lint_output(BEFORE)))
    runtime = bl.load_observation(write(tmp_path, "r.json", runtime_report(BEFORE)))
    with pytest.raises(bl.InputError, match="baseline of its own kind"):
        gate.check(runtime, bl.create(lint))


def test_ruff_style_lint_fields_are_read(tmp_path):
    ruff = [{"code": "SYN101", "filename": "a/b.py", "location": {"row": 3, "column": 1}, "message": "m"}]
    site = bl.load_observation(write(tmp_path, "l.json", ruff)).sites[0].site
    assert (site.path, site.line, site.kind, site.function) == ("a/b.py", 3, "SYN101", "<module>")
