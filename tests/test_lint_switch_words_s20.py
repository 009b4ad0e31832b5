"""What optin.off_switches reads of each file's text is a per-file fact (`switch_words`), taken
where the file is read for its analysis, so the whole-program pass reads no file for it: a rerun
of the pass (the pre-commit hook's after an edit) takes every other file's words from the cache.
Each case keeps the decisions the text scan made: the opt-in manager of test_lint_optin_s11.py
is cold while the switch is off, and reported once any file, read or cached, may turn it on."""

from __future__ import annotations

from syncscope.lint.engine import lint_paths
from syncscope.lint.optin import switch_words
from syncscope.lint.source_texts import text_of_bytes
from test_lint_guards import lines
from test_lint_optin_s11 import package
from test_lint_scope import lint_package
from lint_helpers import make_config

STORE = """
    def enable(config):
        config.compilation_config.graph_encoder = True
"""


def flagged(tmp_path, extra: dict | None = None, raw: dict | None = None):
    files = {**package(), **(extra or {})}
    root = tmp_path / "pkg"
    for name, data in (raw or {}).items():
        root.mkdir(exist_ok=True)
        (root / name).write_bytes(data)
    return lines(lint_package(tmp_path, files), "pkg/manager.py")


def test_the_words_of_every_file_decide_the_switch(tmp_path):
    assert flagged(tmp_path) == []  # VALID: nothing sets the switch
    # INVALID: a store in a file the analysis never parses (a host-only path) turns it on
    assert flagged(tmp_path, {"cpu_tools.py": STORE}) != []


def test_a_file_not_read_as_utf8_may_set_any_switch(tmp_path):
    # INVALID: a Latin-1 file (the pass reads text as UTF-8) keeps the sync, as its text scan did
    latin = "# -*- coding: latin-1 -*-\n# caf\xe9\nx = 1\n".encode("latin-1")
    assert flagged(tmp_path, raw={"legacy.py": latin}) != []


def test_carriage_returns_read_as_newlines(tmp_path):
    # VALID: a config declared with CRLF line ends declares the switch all the same
    from test_lint_optin_s11 import CONFIG
    import textwrap

    crlf = textwrap.dedent(CONFIG).replace("\n", "\r\n").encode()
    files = {name: source for name, source in package().items() if name != "config.py"}
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "config.py").write_bytes(crlf)
    assert lines(lint_package(tmp_path, files), "pkg/manager.py") == []
    assert switch_words(text_of_bytes(crlf))[0] == ("graph_encoder",)


def test_a_subset_run_takes_the_other_files_words_from_the_cache(tmp_path):
    files = {**package(), "tools.py": STORE}
    lint_package(tmp_path, files)  # writes the package
    config = make_config(tmp_path, include_cold=False, cache_dir=str(tmp_path / "cache"))
    whole = lint_paths([str(tmp_path / "pkg")], config, jobs=1)
    manager = str(tmp_path / "pkg" / "manager.py")
    alone = lint_paths([manager], config, jobs=1)
    assert lines(whole, "pkg/manager.py") == lines(alone, "pkg/manager.py") != []
    # the store removed: the next subset run reads the edited file's new words
    (tmp_path / "pkg" / "tools.py").write_text("def enable(config):\n    return config\n")
    assert lines(lint_paths([manager], config, jobs=1), "pkg/manager.py") == []
