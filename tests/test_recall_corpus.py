"""The recall corpus (tests/data/recall_corpus/corpus.json) and the script that rebuilds and
measures it (bench/recall_corpus.py): every entry carries its evidence, and the script's line
logic (removed lines, statement spans, candidates) does what the measurement relies on. The
measurement itself lints whole releases of vLLM and SGLang and lives in the bench."""

from __future__ import annotations

import importlib.util
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORMS = {"store", "host_to_device", "device_scalar", "tolist", "classic"}


def _script():
    spec = importlib.util.spec_from_file_location("recall_corpus", os.path.join(ROOT, "bench", "recall_corpus.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_entry_has_its_evidence():
    with open(os.path.join(ROOT, "tests", "data", "recall_corpus", "corpus.json"), encoding="utf-8") as handle:
        corpus = json.load(handle)
    assert len(corpus) >= 36
    seen = set()
    for entry in corpus:
        assert entry["engine"] in ("vllm", "sglang")
        assert entry["file"].startswith(entry["engine"] + "/")
        assert entry["form"] in FORMS
        assert entry["text"] and entry["device"] and entry["child_change"]
        assert tuple(map(int, entry["parent"].split("."))) < tuple(map(int, entry["child"].split(".")))
        key = (entry["engine"], entry["parent"], entry["file"], entry["line"])
        assert key not in seen, key
        seen.add(key)
    # vLLM's changes of December 2025 to May 2026 are held out: only releases from June 2026 on
    assert all(tuple(map(int, e["parent"].split("."))) >= (0, 30, 0) for e in corpus if e["engine"] == "vllm")


def test_removed_lines_and_statement_spans():
    script = _script()
    parent = ["a = 1", "x = t.item()", "b = 2"]
    child = ["a = 1", "x = t_cpu[0]", "b = 2"]
    assert list(script.removed_lines(parent, child)) == [1]
    source = "def f(t):\n    y = g(\n        t.item(),\n    )\n    if t.any():\n        pass\n"
    assert script.statement_span(source, 3) == (2, 4)  # inside a call spread over lines
    assert script.statement_span(source, 5) == (5, 5)  # a compound statement's header


def test_candidates_list_removed_sync_forms(tmp_path, capsys):
    script = _script()
    (tmp_path / "old" / "pkg").mkdir(parents=True)
    (tmp_path / "new" / "pkg").mkdir(parents=True)
    (tmp_path / "old" / "pkg" / "m.py").write_text(
        "def f(t, idx):\n    n = t.sum().item()\n    t[idx] = 0\n    return n\n")
    (tmp_path / "new" / "pkg" / "m.py").write_text(
        "def f(t, idx):\n    n = 0\n    t.index_fill_(0, idx, 0)\n    return n\n")
    script.main(["candidates", str(tmp_path / "old"), str(tmp_path / "new")])
    out = capsys.readouterr().out
    assert "pkg/m.py:2: [item]" in out and "pkg/m.py:3: [store]" in out
