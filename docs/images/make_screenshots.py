"""Remake the HTML report screenshots in this folder from real runs on the simulated device.

    python docs/images/make_screenshots.py        # needs Chromium (apt-get install chromium) and playwright

Runs the serving loop naive and fixed (`syncscope run --device sim`), lints it, writes the pages
with `syncscope report --html`, and photographs them in headless Chromium.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

from playwright.sync_api import sync_playwright

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def syncscope(*args: str, cwd: str = REPO) -> None:
    env = {**os.environ, "PYTHONPATH": REPO}
    subprocess.run([sys.executable, "-m", "syncscope", *args], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    tmp = tempfile.mkdtemp(prefix="syncscope-shots-")
    naive, fixed, lint = (os.path.join(tmp, n) for n in ("naive.json", "fixed.json", "lint.json"))
    for impl, path in (("naive", naive), ("fixed", fixed)):
        syncscope("run", "--device", "sim", "--no-table", "-o", path, "examples/serve_loop.py", "--impl", impl, "--steps", "8")
    with open(lint, "w") as fh:
        subprocess.run([sys.executable, "-m", "syncscope", "lint", "--output-format", "json", "reference_impl", "examples/serve_loop.py"],
                       cwd=REPO, stdout=fh)
    compare_page, heat_page = os.path.join(tmp, "compare.html"), os.path.join(tmp, "heat.html")
    syncscope("report", "fixed.json", "--html", "-o", compare_page, "--compare", "naive.json", cwd=tmp)
    syncscope("report", "naive.json", "--html", "-o", heat_page, "--lint", "lint.json", cwd=tmp)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True)
        page = browser.new_page(viewport={"width": 1600, "height": 900})
        page.goto("file://" + compare_page)
        page.click("#compare-table tbody tr[data-state=gone] >> nth=4")
        page.locator("#compare").screenshot(path=os.path.join(HERE, "html-compare.png"))
        page.goto("file://" + heat_page)
        page.click("#sites tbody tr:has-text('gdn_spec_decode.py:79')")
        page.click("#source-view details.stack summary")
        page.locator("#sites-section").screenshot(path=os.path.join(HERE, "html-source-heat.png"))
        browser.close()
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
