"""Regions, allow-lists, policies and reports, driven through the recorder (no device needed)."""

import json
import threading

import pytest

from syncscope.atomic import write_json_atomic
from syncscope.report.aggregate import build_report
from syncscope.report.schema import Report, ReportError, load_report
from syncscope.runtime import regions
from syncscope.events import SyncKind
from syncscope.runtime.policy import HostSyncError, Policy
from syncscope.runtime.recorder import AllowRule, Recorder


@pytest.fixture(autouse=True)
def fresh_scoping():
    before = regions.enter_trap_state(regions.TrapState())
    regions.trap_state().declared = False
    yield
    regions.restore_trap_state(before)


def sync_here(recorder, kind=SyncKind.ITEM):
    return recorder.record(kind, "Tensor.item", blocked_ns=1000)  # the line of this call is the site


def test_without_regions_everything_is_in_scope(tmp_path):
    rec = Recorder(root=str(tmp_path))
    event = sync_here(rec)
    assert event.in_scope and event.region is None
    assert event.site.function == "sync_here"
    assert event.source == "return recorder.record(kind, \"Tensor.item\", blocked_ns=1000)  # the line of this call is the site"


def test_once_a_region_exists_only_its_syncs_are_in_scope():
    rec = Recorder()
    with regions.region("decode_step"):
        inside = sync_here(rec)
    outside = sync_here(rec)
    assert inside.in_scope and inside.region == "decode_step"
    assert not outside.in_scope and outside.region is None


def test_region_works_as_a_decorator_and_nests():
    rec = Recorder()

    @regions.region("build")
    def build():
        with regions.region("inner"):
            return sync_here(rec)

    assert build().region == "inner"
    assert regions.current_region() is None


def test_one_region_object_can_be_entered_again_and_recursively():
    rec = Recorder()
    step = regions.region("step")
    for _ in range(2):
        with step:
            assert sync_here(rec).region == "step"
    assert regions.current_region() is None

    @regions.region("walk")
    def walk(depth):
        return walk(depth - 1) if depth else regions.current_region()

    assert walk(3) == "walk"
    with pytest.raises(KeyError):  # an error inside leaves the region and propagates as is
        with step:
            raise KeyError("x")
    assert regions.current_region() is None
    with pytest.raises(ValueError):  # a bad policy is refused where the region is made
        regions.region("bad", policy="sometimes")


def test_regions_are_per_thread():
    rec = Recorder()
    seen = {}
    entered, release = threading.Event(), threading.Event()

    def other():
        entered.wait()
        seen["other"] = sync_here(rec)  # main thread is inside a region; this thread is not
        release.set()

    thread = threading.Thread(target=other)
    thread.start()
    with regions.region("main_only"):
        entered.set()
        release.wait()
        seen["main"] = sync_here(rec)
    thread.join()
    assert seen["main"].in_scope
    assert not seen["other"].in_scope


def test_error_policy_raises_with_site_and_kind():
    rec = Recorder(policy=Policy.ERROR)
    with pytest.raises(HostSyncError) as info:
        sync_here(rec, SyncKind.TOLIST)
    assert info.value.kind == "tolist"
    assert "test_runtime_core.py" in info.value.location
    assert len(rec.events) == 1  # recorded before raising


def test_error_policy_only_in_scope():
    rec = Recorder(policy=Policy.ERROR)
    with regions.region("hot"):
        pass
    assert not sync_here(rec).in_scope  # outside the region: recorded, not raised


def test_allow_sync_is_reported_as_allowed_and_not_raised():
    rec = Recorder(policy=Policy.ERROR)
    with regions.allow_sync("warm-up"):
        event = sync_here(rec)
    assert event.allowed and event.allow_reason == "warm-up"


def test_allow_sync_needs_a_reason():
    with pytest.raises(ValueError):
        with regions.allow_sync(""):
            pass


def test_config_allow_rule_matches_site():
    rec = Recorder(policy=Policy.ERROR, allow_rules=(AllowRule(path="*test_runtime_core.py", function="sync_here", reason="cfg"),))
    event = sync_here(rec)
    assert event.allowed and event.allow_reason == "cfg"


def test_warn_policy_prints_each_site_once(capsys):
    rec = Recorder(policy=Policy.WARN)
    for _ in range(3):
        sync_here(rec)
    err = capsys.readouterr().err
    assert err.count("syncscope: host sync item") == 1
    assert len(rec.events) == 3


def test_policy_override_in_region():
    rec = Recorder(policy=Policy.RECORD)
    with pytest.raises(HostSyncError):
        with regions.region("strict", policy="error"):
            sync_here(rec)
    sync_here(rec)  # back to record outside


def test_suspended_records_nothing():
    rec = Recorder()
    with regions.suspend():
        assert sync_here(rec) is None
    assert rec.events == []


def test_report_aggregates_sites_sorted_by_blocked_time(tmp_path):
    rec = Recorder()
    for _ in range(3):
        sync_here(rec)
    rec.record(SyncKind.NONZERO, "torch.nonzero", blocked_ns=10_000)
    report = build_report(rec.events, {"device": "sim"})
    data = report.to_json()
    assert data["schema"] == "syncscope.report" and data["version"] == 2
    first, second = data["sites"]
    assert first["kind"] == "nonzero" and first["blocked_ns"] == 10_000
    assert second["count"] == 3 and second["blocked_ns"] == 3000 and second["mean_blocked_ns"] == 1000
    for site in data["sites"]:
        assert {"path", "line", "function", "kind", "count", "blocked_ns", "in_scope"} <= set(site)
    assert data["summary"]["events"] == 4 and len(data["events"]) == 4


def test_unmeasured_blocked_time_is_null_not_zero():
    rec = Recorder()
    rec.record(SyncKind.ITEM, "Tensor.item")
    (site,) = build_report(rec.events, {}).to_json()["sites"]
    assert site["blocked_ns"] is None and site["mean_blocked_ns"] is None


def test_report_round_trip(tmp_path):
    rec = Recorder()
    sync_here(rec)
    path = tmp_path / "r.json"
    write_json_atomic(str(path), build_report(rec.events, {"device": "sim"}).to_json())
    loaded = load_report(str(path))
    assert loaded.sites[0].count == 1 and loaded.meta["device"] == "sim"
    assert Report.from_json(json.loads(path.read_text())).sites[0].fingerprint == loaded.sites[0].fingerprint


@pytest.mark.parametrize("text", ["", "{}", '{"schema": "other"}', '{"schema": "syncscope.report", "version": 99, "sites": []}', "[1,"])
def test_malformed_reports_are_clear_errors(tmp_path, text):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(ReportError):
        load_report(str(path))


def test_atomic_write_leaves_old_file_when_serialisation_fails(tmp_path):
    path = tmp_path / "r.json"
    path.write_text('{"old": true}')
    with pytest.raises(TypeError):
        write_json_atomic(str(path), {"bad": object()})
    assert json.loads(path.read_text()) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_syncs_before_the_first_region_are_settled_out_of_scope():
    rec = Recorder()
    early = sync_here(rec)  # no region declared yet: in scope at the time
    with regions.region("decode_step"):
        sync_here(rec)
    assert early.in_scope
    rec.settle_scope()
    assert [(e.region, e.in_scope) for e in rec.events] == [(None, False), ("decode_step", True)]


def test_console_shows_source_with_brackets(tmp_path):
    import io

    from syncscope.render import console

    rec = Recorder()
    rec.record(SyncKind.BOOL_MASK_INDEX, "Tensor.__getitem__")  # y = x[mask] would lose [mask] as markup
    report = build_report(rec.events, {"device": "sim"})
    report.sites[0].source = "y = x[mask]"
    out = io.StringIO()
    console.render(report, file=out)
    assert "y = x[mask]" in out.getvalue()


def test_reports_are_ordinary_files_not_private_ones(tmp_path):
    import os
    import stat

    path = tmp_path / "r.json"
    write_json_atomic(str(path), {"a": 1})
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


def test_each_sync_gets_an_nvtx_mark_with_kind_and_line(monkeypatch):
    from syncscope.runtime import nvtx_marks

    class FakeNvtx:
        def __init__(self):
            self.marks, self.ranges = [], []

        def mark(self, message, color, domain):
            self.marks.append((message, domain))

        def start_range(self, message, color, domain):
            self.ranges.append(message)
            return len(self.ranges)

        def end_range(self, handle):
            self.ranges.append(("end", handle))

    fake = FakeNvtx()
    monkeypatch.setattr(nvtx_marks, "_nvtx", fake)
    rec = Recorder()
    event = sync_here(rec)
    ((message, domain),) = fake.marks
    assert domain == "syncscope" and message == f"sync item {event.site.path}:{event.site.line}"
    with nvtx_marks.blocking_range("sync item Tensor.item"):
        pass
    assert fake.ranges == ["sync item Tensor.item", ("end", 1)]
