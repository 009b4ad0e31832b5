"""Following children: multiprocessing fork, spawn and forkserver children (and Pool workers, ended
by SIGTERM) each write their own report; combined, no event is lost or counted twice."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest

from syncscope.ci import combine
from syncscope.runtime import multiprocess

# A program whose syncs are recorded by hand (`recorder.record`, what a detector calls), so the
# plumbing is tested on any machine, whatever detector exists: the null detector below is
# installed in the parent, and in spawned children when they re-import this script.
PROGRAM = textwrap.dedent(
    '''
    import multiprocessing as mp
    import sys

    import syncscope.runtime.trap as T


    class NullDetector:
        name = "null"

        def install(self, recorder):
            pass

        def uninstall(self):
            pass


    T.make_detector = lambda device, **options: NullDetector()


    def sync(n):
        recorder = T.active().recorder
        for _ in range(n):
            recorder.record("item", "Tensor.item")  # the planted sync
        return n


    def main():
        ctx = mp.get_context(sys.argv[1])
        sync(2)
        procs = [ctx.Process(target=sync, args=(3 + i,)) for i in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join()
        assert [p.exitcode for p in procs] == [0, 0], [p.exitcode for p in procs]
        with ctx.Pool(2) as pool:  # __exit__ terminates the idle workers with SIGTERM
            assert pool.map(sync, [1, 1, 1, 1]) == [1, 1, 1, 1]


    if __name__ == "__main__":
        main()
    '''
)

# The command line, with the null detector in the parent before `syncscope run` starts its trap.
LAUNCH = (
    "import sys, runpy; import syncscope.runtime.trap as T; "
    "T.make_detector = lambda device, **options: type('N', (), {'name': 'null', 'install': lambda s, r: None, 'uninstall': lambda s: None})(); "
    "from syncscope.cli import main; sys.argv = ['syncscope'] + sys.argv[1:]; main()"
)


def run_program(tmp_path, method: str, env: dict | None = None) -> subprocess.CompletedProcess:
    (tmp_path / "prog.py").write_text(PROGRAM)
    cmd = [sys.executable, "-c", LAUNCH, "run", "--device", "sim", "--no-table", "-o", "out/syncscope-report.json", "prog.py", method]
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("method", ["fork", "spawn", "forkserver"])
def test_children_write_their_own_reports_and_combine_loses_nothing(tmp_path, method):
    proc = run_program(tmp_path, method)
    assert proc.returncode == 0, proc.stderr
    reports = sorted(glob.glob(str(tmp_path / "out" / "*.json")))
    parent = str(tmp_path / "out" / "syncscope-report.json")
    assert parent in reports
    children = [r for r in reports if r != parent]
    # Two processes and the pool workers. A spawned pool worker that Pool.terminate() kills while
    # it is still starting up has run no task and recorded nothing, so it may leave no report.
    assert 3 <= len(children) <= 4, reports
    host = multiprocess.socket.gethostname().split(".")[0]
    for path in children:
        data = json.load(open(path))
        assert os.path.basename(path) == f"syncscope-report.{host}.{data['pid']}.json"
        assert data["parent_pid"] == json.load(open(parent))["pid"]
    counts = {os.path.basename(p): json.load(open(p))["summary"]["events"] for p in reports}
    assert counts["syncscope-report.json"] == 2  # a forked child's copy of these was dropped
    assert sum(counts.values()) == 2 + 3 + 4 + 4
    merged = combine.combine(reports)
    assert merged["summary"]["events"] == 13
    (site,) = merged["sites"]
    assert (site["path"], site["function"]) == ("prog.py", "sync")
    assert "the planted sync" in site["source"]
    assert sorted(p["count"] for p in site["processes"] if p["count"]) == sorted(c for c in counts.values() if c)


def test_a_torchrun_rank_names_its_report_and_its_children_carry_the_rank(tmp_path):
    proc = run_program(tmp_path, "fork", env={"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1"})
    assert proc.returncode == 0, proc.stderr
    names = sorted(os.path.basename(p) for p in glob.glob(str(tmp_path / "out" / "*.json")))
    assert len(names) >= 4 and all(n.endswith(".rank1.json") for n in names), names
    assert {json.load(open(tmp_path / "out" / n))["rank"] for n in names} == {1}


def test_report_names():
    assert multiprocess.report_path_for("r/syncscope-report.json", host="h", pid=7) == "r/syncscope-report.h.7.json"
    assert multiprocess.report_path_for("out.json", host="h", pid=7, rank=3) == "out.h.7.rank3.json"
    assert multiprocess.report_path_for("out", host="h", pid=7) == "out.h.7.json"
    assert multiprocess.report_path_for("r/{host}-{rank}-{pid}.json", host="h", pid=7, rank=0) == "r/h-0-7.json"


def test_process_report_path_only_changes_for_ranks(monkeypatch):
    monkeypatch.delenv("RANK", raising=False)
    assert multiprocess.process_report_path("/x/r.json") == "/x/r.json"
    monkeypatch.setenv("RANK", "0")
    assert multiprocess.process_report_path("/x/r.json").endswith(".rank0.json")


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SIM_PROGRAM = '''
import multiprocessing as mp
import sys

import torch


def work(n):
    x = torch.arange(8, device="cuda")
    for _ in range(n):
        x.sum().item()  # planted
    return n


if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    work(1)
    procs = [ctx.Process(target=work, args=(2 + i,)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    sys.exit(max(p.exitcode for p in procs))
'''


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_children_on_the_simulated_device(tmp_path, method):
    """The real `syncscope run --device sim`: children trap their own syncs on the simulated GPU."""
    (tmp_path / "prog.py").write_text(SIM_PROGRAM)
    run = [sys.executable, "-m", "syncscope", "run", "--device", "sim", "--no-table", "-o", "out/r.json", "prog.py", method]
    proc = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    reports = sorted(glob.glob(str(tmp_path / "out" / "*.json")))
    assert len(reports) == 3
    merged = combine.combine(reports)
    (site,) = [s for s in merged["sites"] if s["in_scope"]]
    assert (site["kind"], site["count"], site["source"]) == ("item", 1 + 2 + 3, "x.sum().item()  # planted")
    assert sorted(p["count"] for p in site["processes"]) == [1, 2, 3]


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists(os.path.join(REPO, "bench", "torchrun_check.sh")), reason="no bench script")
def test_torchrun_ranks_on_cpu_with_gloo(tmp_path):
    """bench/torchrun_check.sh on CPU: two torchrun ranks (gloo, simulated GPU) each write a report,
    combine merges them, the planted sync is on rank 1 only. The same script runs on 2 GPUs."""
    env = {**os.environ, "SYNCSCOPE_DEVICE": "sim", "REPORTS": str(tmp_path / "reports"), "STEPS": "5", "PYTHON": sys.executable}
    proc = subprocess.run(["bash", "bench/torchrun_check.sh"], cwd=REPO, capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "planted sync examples/tp_allreduce.py:" in proc.stdout and "on rank 1 only, 5 events" in proc.stdout
    names = sorted(os.listdir(tmp_path / "reports"))
    assert [n.rsplit(".", 2)[-2] for n in names if ".rank" in n] == ["rank0", "rank1"]
