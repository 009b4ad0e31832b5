"""`syncscope report --html` without a browser: the page's data, escaping, the before/after
comparison, the lint overlay (the same matching as `lint --confirm`), optional GPU-idle fields and
the command line's errors. tests/test_html_browser.py loads the pages in Chromium."""

from __future__ import annotations

import json
import os
import re
from html import unescape
from pathlib import Path

import pytest
from typer.testing import CliRunner

from html_support import GPU_SITES, HOSTILE, gpu_report, hostile_report, oracle_report, write_json
from syncscope.cli import app
from syncscope.lint.confirm import confirm
from syncscope.render import html
from syncscope.render.diff import compare
from syncscope.report.schema import Report


def page(path, **kw):
    return html.page_data(html.load(path), **kw)


def embedded_data(text: str) -> dict:
    """The page's JSON block, with its sites read back into objects as report.js does."""
    (blob,) = re.findall(r'<script type="application/json" id="syncscope-data">(.*?)</script>', text, re.S)
    data = json.loads(blob)

    def expand(rows):
        fields = data["site_fields"]
        out = []
        for i, row in enumerate(rows):
            site = {**(row[len(fields)] if len(row) > len(fields) else {}), **dict(zip(fields, row)), "i": i}
            site["path"] = data["paths"][site["path"]]
            out.append(site)
        return out

    data["sites"] = expand(data["sites"])
    if data["compare"]:
        data["compare"]["before_sites"] = expand(data["compare"]["before_sites"])
    return data


def test_the_embedded_sites_read_back_to_the_page_data(tmp_path):
    path = write_json(str(tmp_path / "gpu.json"), gpu_report(str(tmp_path)))
    full = page(path)["sites"]
    sites = embedded_data(html.render(html.load(path)))["sites"]
    assert [s["i"] for s in sites] == list(range(len(full)))
    for mine, theirs in zip(sites, full):  # the keys left out hold their defaults
        assert {k: v for k, v in theirs.items() if k in mine} == mine
        assert all(theirs[k] == html._SITE_DEFAULTS[k] or k == "stack" for k in theirs.keys() - mine.keys() - {"fingerprint"})


def test_gpu_report_page_has_measured_sites_and_the_function_source(tmp_path):
    path = write_json(str(tmp_path / "gpu.json"), gpu_report(str(tmp_path)))
    data = page(path)
    by_line = {s["line"]: s for s in data["sites"]}
    for line, kind, count, blocked in GPU_SITES:
        assert by_line[line]["kind"] == kind and by_line[line]["count"] == count
        assert by_line[line]["blocked_ns"] == count * blocked
    assert data["summary"]["measured"] and data["summary"]["device"] == "cuda (NVIDIA H100 80GB HBM3)"
    in_scope = sum(count * blocked for _, _, count, blocked in GPU_SITES)
    assert data["summary"]["blocked_ms"] == f"{in_scope / 1e6:.3f}"
    # the source view holds Builder.build whole, decorators and all, and marks its sync lines
    excerpt = data["excerpts"][by_line[12]["x"]]
    assert excerpt["function"] == "Builder.build" and [n for n, _ in excerpt["lines"]] == list(range(10, 16))
    assert dict(excerpt["lines"])[12] == "        rows = mask.nonzero()"
    # a stack frame in another function has its own excerpt
    (outer,) = [f for f in by_line[5]["stack"] if f["line"] == 11]
    assert data["excerpts"][outer["x"]]["function"] == "Builder.build"
    assert not any(s["stale"] for s in data["sites"])
    assert data["timeline"]["shown"] == sum(c for _, _, c, _ in GPU_SITES) and data["timeline"]["regions"] == ["decode_step"]


def test_a_file_edited_since_the_run_is_flagged(tmp_path):
    path = write_json(str(tmp_path / "gpu.json"), gpu_report(str(tmp_path)))
    source = (tmp_path / "builder.py").read_text().replace("rows = mask.nonzero()", "rows = mask.nonzero_static(size=4)")
    (tmp_path / "builder.py").write_text(source)
    stale = {s["line"]: s["stale"] for s in page(path)["sites"]}
    assert stale == {5: False, 12: True, 13: False, 14: False}


def test_a_file_that_is_gone_falls_back_to_the_recorded_line(tmp_path):
    path = write_json(str(tmp_path / "gpu.json"), gpu_report(str(tmp_path)))
    os.unlink(tmp_path / "builder.py")
    data = page(path)
    assert all(s["x"] is None for s in data["sites"]) and data["excerpts"] == []
    assert data["sites"][0]["source"]  # what the page shows instead


def test_hostile_text_is_escaped_everywhere(tmp_path):
    path = write_json(str(tmp_path / "h.json"), hostile_report(str(tmp_path)))
    text = html.render(html.load(path))
    # exactly the page's own two scripts, and none of the report's markup as markup
    assert text.count("<script") == 2 and text.count("</script>") == 2
    assert "<img" not in text and "<b>" not in text and "<i>" not in text
    data = embedded_data(text)  # the JSON block still reads back exactly
    assert any(s["kind"] == f"item{HOSTILE}" for s in data["sites"])
    assert any(HOSTILE in line for e in data["excerpts"] for _, line in e["lines"])  # the file was read
    # the content security policy pins the page's own script and style by hash
    csp = unescape(re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text).group(1))
    assert "unsafe-inline" not in csp and "default-src 'none'" in csp
    assert re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+';", csp) and re.search(r"style-src 'sha256-[A-Za-z0-9+/=]+';", csp)


def test_compare_lists_gone_new_changed_and_the_totals(tmp_path):
    before = Report.from_json(gpu_report(str(tmp_path)))
    after_data = gpu_report(str(tmp_path))
    after_data["sites"] = [s for s in after_data["sites"] if s["line"] != 12]  # the nonzero sync fixed
    for s in after_data["sites"]:
        if s["line"] == 14:
            s["count"] = 2  # half the synchronizes
    after_data["events"] = []
    after = Report.from_json(after_data)
    result = compare(before, after)
    states = {c.shown.first.line: c.state for c in result.changes}
    assert states == {12: "gone", 14: "changed", 5: "unchanged", 13: "unchanged"}
    assert result.totals_before["in_scope_events"] == 124 and result.totals_after["in_scope_events"] == 124 - 40 - 4 + 2
    assert result.totals_before["sites"] == 4 and result.totals_after["sites"] == 3
    # the other way round the fixed site is new
    assert {c.shown.first.line: c.state for c in compare(after, before).changes}[12] == "new"


def test_compare_of_a_report_with_itself_changes_nothing(tmp_path):
    report = Report.from_json(gpu_report(str(tmp_path)))
    assert {c.state for c in compare(report, report).changes} == {"unchanged"}


def test_lint_overlay_matches_lint_confirm(tmp_path):
    report_data = gpu_report(str(tmp_path))
    findings = [
        {"code": "SYN201", "path": "builder.py", "line": 13, "function": "Builder.build", "source": "first = rows[0].item()", "message": "m"},
        {"code": "SYN501", "path": "builder.py", "line": 14, "function": "Builder.build", "source": "torch.cuda.synchronize()", "message": "m"},
        {"code": "SYN201", "path": "builder.py", "line": 2, "function": "<module>", "source": "import torch", "message": "never reached"},
        # a helper's caller: confirmed through the stack of the sync in prepare()
        {"code": "SYN601", "path": "builder.py", "line": 11, "function": "Builder.build", "source": "n = prepare(lens)", "message": "m"},
    ]
    path = write_json(str(tmp_path / "gpu.json"), report_data)
    lint_path = write_json(str(tmp_path / "lint.json"), findings)
    data = page(path, lint=html.load_lint(lint_path))
    expected = confirm(findings, Report.from_json(report_data))
    overlay = data["lint"]
    assert [(f["code"], f["line"]) for f in overlay["confirmed"]] == [(c.finding["code"], c.finding["line"]) for c in expected.confirmed]
    assert [(f["code"], f["line"]) for f in overlay["static_only"]] == [("SYN201", 2)]
    by_line = {s["line"]: s for s in data["sites"]}
    assert [data["sites"][i]["line"] for i in overlay["runtime_only"]] == [12]  # nonzero: no rule caught it
    assert by_line[12]["lint"] == "runtime only" and by_line[13]["lint"] == "confirmed" and by_line[5]["lint_codes"] == ["SYN601"]


def test_gpu_idle_fields_are_shown_where_present(tmp_path):
    data = gpu_report(str(tmp_path))
    names = html.GPU_IDLE_FIELDS
    for s in data["sites"]:
        s[names["site_count"]], s[names["site_ns"]] = 3, 2_000_000 if s["line"] == 14 else 100_000
    data[names["window"]] = {names["window_idle_ns"][0]: 9_000_000}
    path = write_json(str(tmp_path / "gpu.json"), data)
    text = html.render(html.load(path))
    summary = html.page_data(html.load(path))["summary"]
    assert summary["gpu_idle_ms"] == "2.300" and summary["gpu_idle_window"]["idle_ms"] == "9.000"
    assert 'data-sort="idle"' in text and "GPU idle" in text
    # absent (a report of today), the column is not there at all
    plain = write_json(str(tmp_path / "plain.json"), gpu_report(str(tmp_path)))
    assert 'data-sort="idle"' not in html.render(html.load(plain))


def test_oracle_report_keeps_its_line_verdicts(tmp_path):
    path = write_json(str(tmp_path / "o.json"), oracle_report(str(tmp_path)))
    data = page(path)
    assert sorted((s["line"], s["kind"]) for s in data["sites"]) == [(3, "blocked_line"), (4, "blocked_line")]
    assert [(line, verdict) for _, line, verdict, _ in data["oracle_lines"]] == [(2, "free"), (3, "blocked"), (4, "blocked"), (5, "free")]
    assert data["summary"]["oracle"] and data["summary"]["oracle_sleep_ms"] == "25.000"


runner = CliRunner()


def test_cli_writes_the_page_atomically_and_to_stdout(tmp_path):
    path = write_json(str(tmp_path / "gpu.json"), gpu_report(str(tmp_path)))
    out = tmp_path / "page.html"
    result = runner.invoke(app, ["report", path, "--html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!doctype html>") and out.read_text().rstrip().endswith("</html>")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".syncscope-")] == []
    result = runner.invoke(app, ["report", path, "--html", "-o", "-"])
    assert result.exit_code == 0 and result.stdout.startswith("<!doctype html>")


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--compare", "{report}"], "go with --html"),
        (["--html", "--compare", "{missing}"], "no such report"),
        (["--html", "--lint", "{report}"], "a syncscope report, not lint output"),
        (["--html", "--lint", "{bad_lint}"], "finding #0 is malformed"),
        (["--html", "--format", "json"], "leave out --format"),
        (["--html", "-o", "{nodir}/x.html"], "cannot write"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, extra, message):
    path = write_json(str(tmp_path / "gpu.json"), gpu_report(str(tmp_path)))
    bad_lint = write_json(str(tmp_path / "bad.json"), [{"code": "SYN201"}])
    fill = {"report": path, "missing": str(tmp_path / "nope.json"), "bad_lint": bad_lint, "nodir": str(tmp_path / "no" / "dir")}
    result = runner.invoke(app, ["report", path] + [a.format(**fill) for a in extra])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.output


def test_page_is_self_contained(tmp_path):
    path = write_json(str(tmp_path / "gpu.json"), gpu_report(str(tmp_path)))
    text = html.render(html.load(path))
    assert not re.search(r'(src|href)\s*=\s*["\']?(https?:)?//', text)  # nothing fetched at view time
    assert "@import" not in text and "url(" not in text
    assert len(text.encode()) < 60_000  # small: template, CSS and JS included


def test_the_script_fills_in_every_key_the_page_leaves_out():
    script = (Path(html.__file__).parent / "html_assets" / "report.js").read_text()
    defaults = re.search(r"const DEFAULTS = \{(.*?)\};", script, re.S).group(1)
    assert set(re.findall(r"(\w+):", defaults)) == set(html._SITE_DEFAULTS)


def test_the_page_is_made_without_torch(tmp_path):
    import subprocess
    import sys

    path = write_json(str(tmp_path / "o.json"), oracle_report(str(tmp_path)))
    code = ("import sys; from syncscope.cli import main; sys.argv = ['syncscope', 'report', sys.argv[1], '--html', '-o', sys.argv[2]]\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\nassert 'torch' not in sys.modules and 'libcst' not in sys.modules, 'imported'")
    done = subprocess.run([sys.executable, "-c", code, path, str(tmp_path / "o.html")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "o.html").exists()


@pytest.mark.gpu
def test_gpu_run_of_the_serving_loop_renders_with_measured_times(tmp_path):
    """On the GPU: the naive loop's real report, its page, and the fixed loop compared with it."""
    from html_support import syncscope

    reports = {}
    for impl in ("naive", "fixed"):
        reports[impl] = str(tmp_path / f"{impl}.json")
        syncscope("run", "--device", "cuda", "--no-table", "-o", reports[impl], "examples/serve_loop.py", "--impl", impl, "--steps", "16")
    data = page(reports["naive"])
    assert data["summary"]["device"].startswith("cuda (") and data["summary"]["measured"]
    assert float(data["summary"]["blocked_ms"]) > 0
    in_scope = [s for s in data["sites"] if s["group"] == "in scope"]
    assert len(in_scope) >= 10 and all(s["blocked_ns"] is not None for s in in_scope)
    assert all(s["x"] is not None and not s["stale"] for s in in_scope)  # the function source is on the page
    out = tmp_path / "diff.html"
    syncscope("report", reports["fixed"], "--html", "-o", str(out), "--compare", reports["naive"])
    compared = embedded_data(out.read_text())["compare"]
    assert compared["counts"]["gone"] >= 10 and compared["counts"]["new"] == 0
    print(f"\nGPU naive: {len(in_scope)} in-scope sites, host blocked {data['summary']['blocked_ms']} ms; "
          f"fixed vs naive: {compared['counts']}")
