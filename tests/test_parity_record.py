"""tests/parity/record.py and support.py: a site's path reads the same on every machine, and the
per-program diff names missing and extra sites (what the lead reads after the GPU run)."""

from __future__ import annotations

import json
import sys

from tests.parity import record
from tests.parity.support import ROOT, expected_sites, portable_path, program_names


def test_paths_in_installed_packages_are_named_from_the_package_and_repository_paths_from_the_root():
    assert portable_path("/usr/local/lib/python3.12/dist-packages/transformers/generation/utils.py") == "transformers/generation/utils.py"
    assert portable_path("/work/main/.venv/lib/python3.11/site-packages/transformers/generation/utils.py") == "transformers/generation/utils.py"
    assert portable_path(f"{ROOT}/tests/parity/programs/x.py") == "tests/parity/programs/x.py"
    assert portable_path("tests/parity/programs/x.py") == "tests/parity/programs/x.py"


def test_a_package_found_through_pythonpath_is_named_from_the_longest_sys_path_entry_above_it(monkeypatch):
    # The GPU run installed transformers with `pip install --target /tmp/site` (PYTHONPATH=/tmp/site).
    entries = ["", "relative/dir", "/", "/tmp", "/tmp/site/", "/tmp/sit", "/opt/other"]
    assert portable_path("/tmp/site/transformers/cache_utils.py", entries) == "transformers/cache_utils.py"
    assert portable_path("/tmp/sitex/transformers/cache_utils.py", entries) == "sitex/transformers/cache_utils.py"
    assert portable_path("/srv/transformers/cache_utils.py", entries) == "/srv/transformers/cache_utils.py"
    # the site-packages and repository rules come first
    assert portable_path("/tmp/site/lib/site-packages/transformers/x.py", entries) == "transformers/x.py"
    assert portable_path(f"{ROOT}/tests/parity/programs/x.py", [str(ROOT.parent)]) == "tests/parity/programs/x.py"
    # by default, this interpreter's sys.path
    monkeypatch.setattr("sys.path", ["/tmp/site", *sys.path])
    assert portable_path("/tmp/site/transformers/cache_utils.py") == "transformers/cache_utils.py"


def _report(sites, exit_code=0):
    return {"exit_code": exit_code, "sites": [{"path": p, "line": n, "kind": k} for p, n, k in sites]}


def test_diff_from_reports_names_missing_and_extra_sites_per_program(tmp_path, capsys):
    name, other, failed = program_names()[:3]
    want = sorted(expected_sites(name))
    moved = (want[0][0], want[0][1] + 1000, want[0][2])
    (tmp_path / f"{name}.cuda.json").write_text(json.dumps(_report([*want[1:], moved])))
    (tmp_path / f"{other}.cuda.json").write_text(json.dumps(_report(sorted(expected_sites(other)))))
    (tmp_path / f"{failed}.cuda.json").write_text(json.dumps(_report([], exit_code=1)))
    status = record.main(["--device", "cuda", "--from-reports", str(tmp_path), "--only", name, other, failed])
    out = capsys.readouterr().out
    assert status == 1  # a program without a usable report
    assert f"{name}: differs" in out and f"{other}: same" in out and f"{failed}: no report" in out
    assert f"  missing {want[0][0]}:{want[0][1]} {want[0][2]}" in out
    assert f"  extra   {moved[0]}:{moved[1]} {moved[2]}" in out
    assert "1 same, 1 differ, 1 failed" in out


def test_an_unknown_program_is_one_error_line_and_exit_2(capsys):
    assert record.main(["--only", "no_such_program"]) == 2
    assert capsys.readouterr().err.strip() == "record: no such program: no_such_program"
