"""The HTML report in a real browser: Debian's Chromium driven by Playwright (the system browser,
through `executable_path`; nothing is downloaded). Pages are made from real reports: the naive and
fixed serving loop on the simulated device, two processes combined, the oracle's writer, a run
with no sync, 5,000 sites, and a report full of markup and quotes.

Skipped, with the reason, where Chromium or Playwright is missing (`.ci/run` installs Chromium)."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from syncscope.render import html

from html_support import (HOSTILE, NO_SYNC, REPO, THREADED, gpu_report, hostile_report, many_sites_report, oracle_report,
                          syncscope, write_json)

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[dev]')")


def _chromium() -> str | None:
    for candidate in (os.environ.get("SYNCSCOPE_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


@pytest.fixture(scope="module")
def browser():
    executable = _chromium()
    if executable is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium; .ci/run does it where it can)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, headless=True)
        yield b
        b.close()


class Page:
    """A page in the browser that records every console error and uncaught exception."""

    def __init__(self, browser, path: str | None):
        self.errors: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.on("console", lambda m: self.errors.append(f"console.{m.type}: {m.text}") if m.type in ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        if path is not None:
            self.open(path)

    def open(self, path: str) -> None:
        self.page.goto("file://" + os.path.abspath(path), wait_until="load")

    def column(self, name: str) -> list[str]:
        """The texts of one column of the visible sites table."""
        index = self.page.evaluate(f"JSON.parse(document.getElementById('sites').dataset.columns).indexOf({json.dumps(name)})")
        return self.page.eval_on_selector_all("#sites tbody tr:not([hidden])", f"rows => rows.map(r => r.cells[{index}].textContent.trim())")

    def sort(self, key: str):
        self.page.click(f"#sites th button[data-sort={key}]")

    def close(self):
        errors = list(self.errors)
        self.page.close()
        assert errors == [], errors


def page_of(browser, report: str, *args: str) -> Page:
    out = report[:-5] + ("-" + "-".join(os.path.basename(a)[:-5] for a in args if a.endswith(".json")) if args else "") + ".html"
    syncscope("report", report, "--html", "-o", out, *args)
    return Page(browser, out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Real reports: the serving loop (naive, fixed) on the simulated device, its lint output."""
    d = tmp_path_factory.mktemp("runs")
    paths = {}
    for impl in ("naive", "fixed"):
        paths[impl] = str(d / f"{impl}.json")
        syncscope("run", "--device", "sim", "--no-table", "-o", paths[impl], "examples/serve_loop.py", "--impl", impl, "--steps", "6")
    paths["lint"] = str(d / "lint.json")
    done = syncscope("lint", "--output-format", "json", "--no-cache", "reference_impl", "examples/serve_loop.py", check=False)
    assert done.returncode in (0, 1), done.stderr
    with open(paths["lint"], "w") as fh:
        fh.write(done.stdout)
    return paths


def test_naive_serve_loop_page_sorts_filters_and_shows_source(browser, runs):
    report = json.load(open(runs["naive"]))
    p = page_of(browser, runs["naive"])
    page = p.page
    assert page.inner_text("#summary-syncs") == str(report["summary"]["in_scope_events"])
    assert "sim" in page.inner_text("#summary-device")
    assert len(p.column("i")) == len(report["sites"])

    p.sort("count")  # largest first, then turned around
    counts = [int(c) for c in p.column("count")]
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
    p.sort("count")
    assert [int(c) for c in p.column("count")] == sorted(counts)
    p.sort("kind")
    kinds = p.column("kind")
    assert kinds == sorted(kinds) and len(set(kinds)) > 3
    p.sort("file")
    files = [(f.rsplit(":", 1)[0], int(f.rsplit(":", 1)[1])) for f in p.column("file")]
    assert files == sorted(files)

    page.select_option("#filter-kind", "bool_mask_index")
    assert set(p.column("kind")) == {"bool_mask_index"} and len(p.column("kind")) == 5
    page.select_option("#filter-kind", "")
    page.fill("#filter-text", "seqlens.tolist")
    (only,) = p.column("file")
    assert only == "reference_impl/gdn_chunk_indices.py:57"
    assert "1 of 13 sites match" in page.inner_text("#shown-count")
    page.fill("#filter-text", "")
    assert len(p.column("i")) == 13

    # a site: its function's source, its sync lines heat-highlighted, the line itself current
    site = next(s for s in report["sites"] if s["path"].endswith("gdn_spec_decode.py") and s["line"] == 79)
    page.click(f"#sites tbody tr[data-i='{report['sites'].index(site)}']")
    current = page.inner_text("#source-view tr.current td.code-line")
    assert current.strip().startswith(site["source"].split("  #")[0])
    hot = sorted(int(n) for n in page.eval_on_selector_all("#source-view tr.hot", "rs => rs.map(r => r.dataset.line)"))
    assert hot == [77, 78, 79, 80, 81, 84]  # every sync line of GDNSpecDecodeMetadataBuilder.build
    heat = page.eval_on_selector("#source-view tr.current td.code-line", "td => getComputedStyle(td).backgroundColor")
    assert heat not in ("rgba(0, 0, 0, 0)", "transparent")
    file_lines = open(os.path.join(REPO, site["path"])).read().splitlines()
    shown = page.eval_on_selector_all("#source-view tr[data-line]", "rs => rs.map(r => [Number(r.dataset.line), r.cells[2].textContent])")
    assert all(file_lines[n - 1] == text for n, text in shown) and len(shown) > 20

    # the stack expands; a frame opens its own function with its line marked
    page.click("#source-view details.stack summary")
    frames = page.locator("#source-view details.stack li button")
    assert frames.count() == len(site["stack"])
    outer = site["stack"][1]
    frames.nth(1).click()
    assert page.inner_text("#source-view tr.current td.ln") == str(outer["line"])

    # the timeline: a lane per thread, a mark per event; hovering names the site
    assert page.inner_text("#lane-labels") == "MainThread"
    page.locator("#timeline").scroll_into_view_if_needed()
    times = sorted((e["ts_ns"], n) for n, e in enumerate(report["events"]))
    gaps = [(min(t - times[k - 1][0] if k else 1 << 62, times[k + 1][0] - t if k + 1 < len(times) else 1 << 62), n)
            for k, (t, n) in enumerate(times)]
    alone = max(gaps)[1]  # the event farthest from any other: the nearest mark to its point
    target = report["sites"][report["events"][alone]["site"]]
    point = page.evaluate(f"window.syncscopeReport.markPosition({alone})")
    page.mouse.move(point["x"], point["y"])
    tip = page.inner_text("#tooltip")
    assert tip.startswith(f"{target['kind']} at {target['path']}:{target['line']} in {target['function']}")
    page.mouse.click(point["x"], point["y"])  # a click opens the site
    assert page.inner_text("#source-view tr.current td.ln") == str(target["line"])
    p.close()


def test_compare_view_lists_what_the_fix_removed(browser, runs):
    naive, fixed = json.load(open(runs["naive"])), json.load(open(runs["fixed"]))
    p = page_of(browser, runs["fixed"], "--compare", runs["naive"])
    page = p.page
    gone = len(naive["sites"]) - len(fixed["sites"])
    assert page.inner_text("#compare-counts").split() == [str(gone), "gone", "0", "new", "0", "changed", str(len(fixed["sites"])), "unchanged"]
    states = page.eval_on_selector_all("#compare-table tbody tr", "rs => rs.map(r => r.dataset.state)")
    assert states.count("gone") == gone and states.count("unchanged") == len(fixed["sites"])
    totals = page.eval_on_selector_all("#compare-totals tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))")
    assert ["in-scope syncs", str(naive["summary"]["in_scope_events"]), str(fixed["summary"]["in_scope_events"])] in totals
    listed = page.eval_on_selector_all("#compare-table tbody tr[data-state=gone] td.loc", "cs => cs.map(c => c.textContent)")
    assert sorted(listed) == sorted(f"{s['path']}:{s['line']}" for s in naive["sites"] if s["line"] not in (270, 274))
    # a gone site opens in the source view with the before report's heat
    page.click("#compare-table tbody tr[data-state=gone] >> nth=0")
    assert "from the before report" in page.inner_text("#source-view")
    assert page.locator("#source-view tr.current.hot").count() == 1
    p.close()


def test_lint_overlay(browser, runs):
    from syncscope.lint.confirm import confirm

    findings = json.load(open(runs["lint"]))
    expected = confirm(findings, runs["naive"])
    p = page_of(browser, runs["naive"], "--lint", runs["lint"])
    page = p.page
    assert page.inner_text("#lint-counts").split()[0] == str(len(expected.confirmed))
    assert f"{len(expected.uncaught)} runtime only" in page.inner_text("#lint-counts")
    page.select_option("#filter-lint", "runtime only")
    assert sorted(p.column("file")) == sorted(f"{s.path}:{s.line}" for s in expected.uncaught)
    page.select_option("#filter-lint", "confirmed")
    assert len(p.column("file")) == len({id(s) for c in expected.confirmed for s in c.runtime})
    page.click("#lint table.lint-confirmed tbody tr >> nth=0")
    assert page.locator("#source-view .badge.lint").count() >= 1
    p.close()


def test_combined_two_process_report_has_a_lane_per_process_and_thread(browser, tmp_path):
    (tmp_path / "prog.py").write_text(THREADED)
    for rank, steps in ((0, "2"), (1, "4")):
        syncscope("run", "--device", "sim", "--no-table", "-o", f"r{rank}.json", "prog.py", steps, cwd=str(tmp_path), env={"RANK": str(rank)})
    syncscope("combine", "-o", "combined.json", "r*.json", cwd=str(tmp_path))  # a rank's report name says its rank
    combined = json.load(open(tmp_path / "combined.json"))
    p = page_of(browser, str(tmp_path / "combined.json"))
    page = p.page
    assert "2 processes" in page.inner_text("#summary-processes")
    lanes = page.eval_on_selector_all("#lane-labels div", "ds => ds.map(d => d.textContent)")
    assert sorted(lanes) == ["rank 0 / MainThread", "rank 0 / loader", "rank 1 / MainThread", "rank 1 / loader"]
    page.select_option("#lane-mode", "process")
    assert page.eval_on_selector_all("#lane-labels div", "ds => ds.map(d => d.textContent)") == ["rank 0", "rank 1"]
    item = next(s for s in combined["sites"] if s["kind"] == "item")
    assert item["count"] == 3 + 2 + 3 + 4
    processes = p.column("processes")[p.column("kind").index("item")]
    assert processes == "rank 0: 5, rank 1: 7"
    p.close()


def test_oracle_report_page_shows_blocked_lines_and_verdicts(browser, tmp_path):
    path = write_json(str(tmp_path / "oracle.json"), oracle_report(str(tmp_path)))
    p = page_of(browser, path)
    page = p.page
    assert sorted(p.column("file")) == ["prog.py:3", "prog.py:4"] and set(p.column("kind")) == {"blocked_line"}
    page.click("#sites tbody tr >> nth=0")
    badges = page.eval_on_selector_all("#source-view tr[data-line]", "rs => rs.map(r => [r.dataset.line, (r.querySelector('.badge') || {}).textContent || ''])")
    assert badges == [["1", ""], ["2", "oracle: free"], ["3", "oracle: blocked"], ["4", "oracle: blocked"], ["5", "oracle: free"]]
    p.close()


def test_gpu_report_sorts_by_blocked_time(browser, tmp_path):
    path = write_json(str(tmp_path / "gpu.json"), gpu_report(str(tmp_path)))
    p = page_of(browser, path)
    p.sort("blocked")
    assert [f.rsplit(":", 1)[1] for f in p.column("file")] == ["14", "5", "12", "13"]  # 6.0, 3.6, 1.4, 0.08 ms
    assert p.page.inner_text("#summary-blocked") == "11.080 ms"
    p.page.click("#sites tbody tr >> nth=0")
    assert p.page.inner_text("#source-view tr.current td.heat") == "6.000 ms"
    p.page.select_option("#lane-mode", "region")
    assert p.page.eval_on_selector_all("#lane-labels div", "ds => ds.map(d => d.textContent)") == ["decode_step"]
    p.close()


def test_report_with_no_sync(browser, tmp_path):
    (tmp_path / "quiet.py").write_text(NO_SYNC)
    syncscope("run", "--device", "sim", "--no-table", "-o", "quiet.json", "quiet.py", cwd=str(tmp_path))
    assert json.load(open(tmp_path / "quiet.json"))["sites"] == []
    p = page_of(browser, str(tmp_path / "quiet.json"))
    assert p.page.is_visible("#no-sites") and p.page.inner_text("#summary-syncs") == "0"
    p.sort("count")
    assert p.column("i") == [] and "0 events" in p.page.inner_text("#timeline-caption")
    p.close()


def test_hostile_content_renders_as_text(browser, tmp_path):
    report = hostile_report(str(tmp_path))
    path = write_json(str(tmp_path / "hostile.json"), report)
    p = page_of(browser, path)
    page = p.page
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.querySelectorAll('img, b, i, body script').length") == 2  # the page's own scripts
    assert f"item{HOSTILE}" in p.column("kind")
    assert HOSTILE in page.inner_text("#summary")  # the command, the error, the device: as text
    site = next(i for i, s in enumerate(report["sites"]) if s["line"] == 2)
    page.click(f"#sites tbody tr[data-i='{site}']")
    assert HOSTILE in page.inner_text("#source-view tr.current td.code-line")
    assert report["sites"][site]["path"] in page.inner_text("#source-view .site-head")
    page.fill("#filter-text", "</script>")
    assert len(p.column("i")) == 2
    assert page.evaluate("window.__pwned") is None
    p.close()


def test_5000_sites_open_and_sort_in_under_a_second(browser, tmp_path):
    path = write_json(str(tmp_path / "many.json"), many_sites_report(str(tmp_path)))
    out = str(tmp_path / "many.html")
    syncscope("report", path, "--html", "-o", out)
    timings = []
    for _ in range(3):  # the best of three: another job on a shared machine can stall one
        p = Page(browser, None)  # a tab is open already: the user opens the file in it
        start = time.perf_counter()
        p.open(out)  # until the load event, after the page's script has run
        opened = time.perf_counter() - start
        first = p.page.eval_on_selector("#sites tbody tr", "r => r.dataset.i")
        start = time.perf_counter()
        p.sort("file")
        p.page.wait_for_function(f"document.querySelector('#sites tbody tr').dataset.i !== {json.dumps(first)}")
        sorted_in = time.perf_counter() - start
        files = p.column("file")
        p.close()
        timings.append((opened, sorted_in))
    best = min(timings, key=sum)
    print(f"\n5,000-site page ({os.path.getsize(out) // 1024} KiB), best of 3: opened in {best[0] * 1000:.0f} ms, sorted in "
          f"{best[1] * 1000:.0f} ms, total {sum(best) * 1000:.0f} ms (runs: {[(round(a * 1000), round(b * 1000)) for a, b in timings]})")
    assert files[0] == "many.py:2" and len(files) == html.PAGE_ROWS  # sorted by file; the first page of rows is listed
    assert sum(best) < 1.0
