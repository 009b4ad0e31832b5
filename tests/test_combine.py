"""`syncscope combine`: counts in = counts out, nothing counted twice, never half a file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from syncscope.ci import combine
from syncscope.cli import app
from syncscope.report.schema import load_report
from test_gate_support import runtime_report, write

SOURCE = '''\
def step(x, lens):
    a = lens.sum().item()
    b = x.max().item()
    return a + b


def rank_only(x):
    return x.min().item()
'''


def rank_report(tmp_path, rank: int, counts: dict[int, int]) -> str:
    data = runtime_report(SOURCE, counts=counts, pid=4000 + rank, rank=rank, host="node1")
    return write(tmp_path, f"syncscope-report.node1.{4000 + rank}.rank{rank}.json", data)


def totals(data: dict) -> tuple[int, int, int]:
    return (sum(s["count"] for s in data["sites"]), len(data["events"]), sum(s["blocked_ns"] or 0 for s in data["sites"]))


def test_counts_in_equal_counts_out(tmp_path):
    paths = [rank_report(tmp_path, r, {2: r + 1, 3: 2 * r, 8: 3 if r == 2 else 0}) for r in range(4)]
    inputs = [json.load(open(p)) for p in paths]
    out = combine.combine(paths)
    assert totals(out) == tuple(map(sum, zip(*(totals(d) for d in inputs))))
    # Each merged site says which process had how many, and those add up too.
    for site in out["sites"]:
        assert sum(p["count"] for p in site["processes"]) == site["count"]
        assert sum(1 for e in out["events"] if e["site"] == out["sites"].index(site)) == site["count"]
    rank_only = next(s for s in out["sites"] if s["function"] == "rank_only")
    assert [(p["rank"], p["count"]) for p in rank_only["processes"]] == [(2, 3)]
    assert [p["rank"] for p in out["combined_from"]] == [0, 1, 2, 3]
    assert {e["rank"] for e in out["events"]} == {0, 1, 2, 3}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=6))
def test_counts_are_preserved_for_any_split(tmp_path_factory, per_process):
    tmp = tmp_path_factory.mktemp("split")
    paths = [rank_report(tmp, r, {2: a, 3: b, 8: c}) for r, (a, b, c) in enumerate(per_process)]
    out = combine.combine(paths)
    expected = sum(a + b + c for a, b, c in per_process)
    assert out["summary"]["events"] == expected == len(out["events"])


def test_combining_combined_reports_keeps_counts(tmp_path):
    paths = [rank_report(tmp_path, r, {2: 1, 3: r}) for r in range(4)]
    first = str(tmp_path / "first.json")
    second = str(tmp_path / "second.json")
    combine.combine_files(paths[:2], first)
    combine.combine_files(paths[2:], second)
    nested = combine.combine([first, second])
    flat = combine.combine(paths)
    assert totals(nested) == totals(flat)
    assert len(nested["combined_from"]) == 4
    load_report(first)  # a combined report is still a report


def test_the_same_process_twice_is_refused(tmp_path):
    paths = [rank_report(tmp_path, r, {2: 1}) for r in range(2)]
    copy = str(tmp_path / "copy.json")
    open(copy, "w").write(open(paths[0]).read())
    with pytest.raises(combine.CombineError, match="twice"):
        combine.combine(paths + [copy])
    merged = str(tmp_path / "merged.json")
    combine.combine_files(paths, merged)
    with pytest.raises(combine.CombineError, match="twice"):
        combine.combine([merged, paths[1]])


def test_discover_skips_the_output_and_takes_directories(tmp_path):
    paths = [rank_report(tmp_path, r, {2: 1}) for r in range(3)]
    out = str(tmp_path / "syncscope-combined.json")
    open(out, "w").write("{}")
    assert sorted(combine.discover([str(tmp_path)], out)) == sorted(paths)
    with pytest.raises(combine.CombineError, match="no reports"):
        combine.discover([str(tmp_path / "none-*.json")], out)


def test_cli_combine_and_bad_input(tmp_path):
    paths = [rank_report(tmp_path, r, {2: 1, 3: 1}) for r in range(2)]
    out = str(tmp_path / "merged.json")
    result = CliRunner().invoke(app, ["combine", *paths, "-o", out])
    assert result.exit_code == 0, result.output
    assert "from 2 process(es)" in result.output and "6 events" in result.output  # line 8 syncs once by default
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "syncscope.report", "version": 1, "sites": [')
    result = CliRunner().invoke(app, ["combine", paths[0], str(bad), "-o", out])
    assert result.exit_code == 2 and "bad.json" in result.output
    assert load_report(out).meta["combined_from"]  # the earlier output is intact


WRITER = r'''
import json, sys
sys.path.insert(0, {tests!r})
from syncscope.ci import combine
from syncscope.atomic import write_json_atomic
from test_gate_support import runtime_report
me, rounds, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
source = "def step(x):\n" + "".join(f"    v{{i}} = x[{{i}}].item()\n" for i in range(40))
data = runtime_report(source, counts={{2 + i: 20 for i in range(40)}}, pid=me, rank=me)
for _ in range(rounds):
    write_json_atomic(out + f".part{{me}}.json", data)  # each process rewrites its own report
    write_json_atomic(out, data)  # and all of them race on one shared path
'''


def test_concurrent_writers_never_leave_half_a_file(tmp_path):
    """Real processes rewrite the same report paths while this one keeps reading them: every read
    parses as a whole report, and no temporary file is left behind."""
    out = str(tmp_path / "shared.json")
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(tests=os.path.dirname(__file__)))
    procs = [subprocess.Popen([sys.executable, str(script), str(i), "20", out]) for i in range(4)]
    reads = 0
    deadline = time.monotonic() + 60
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        for path in [out] + [f"{out}.part{i}.json" for i in range(4)]:
            try:
                with open(path) as fh:
                    text = fh.read()
            except FileNotFoundError:
                continue
            data = json.loads(text)  # raises on a partial file
            assert data["summary"]["events"] == 800
            reads += 1
    assert [p.wait() for p in procs] == [0, 0, 0, 0]
    assert reads > 0
    parts = [f"{out}.part{i}.json" for i in range(4)]
    assert combine.combine(parts)["summary"]["events"] == 4 * 800
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


def test_concurrent_combines_into_one_output(tmp_path):
    """Several `syncscope combine` processes writing the same output at once: it always ends whole."""
    paths = [rank_report(tmp_path, r, {2: 5, 3: 5}) for r in range(3)]
    out = str(tmp_path / "merged.json")
    cmd = [sys.executable, "-m", "syncscope", "combine", *paths, "-o", out]
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL) for _ in range(4)]
    assert [p.wait() for p in procs] == [0, 0, 0, 0]
    assert json.load(open(out))["summary"]["events"] == 3 * (5 + 5 + 1)


def test_the_gate_says_which_rank_a_new_site_is_on(tmp_path):
    """A combined torchrun report gated against a baseline: the new site names its rank."""
    from syncscope.ci import baseline as bl
    from syncscope.ci import gate

    clean = "def step(x, lens):\n    a = lens.sum().item()\n"
    before = [write(tmp_path, f"b{r}.json", runtime_report(clean, pid=10 + r, rank=r)) for r in range(2)]
    accepted = bl.create(bl.load_observation(write(tmp_path, "before.json", combine.combine(before))))
    planted = clean + "    b = x.max().item()\n"
    after = [write(tmp_path, "a0.json", runtime_report(clean, pid=20, rank=0)),
             write(tmp_path, "a1.json", runtime_report(planted, pid=21, rank=1))]
    observation = bl.load_observation(write(tmp_path, "after.json", combine.combine(after)))
    result = gate.check(observation, accepted)
    (new,) = result.new
    assert new.ranks == (1,)
    assert gate.describe_site(new)[0] == "model.py:3: item in step, 1 event, on rank 1"
