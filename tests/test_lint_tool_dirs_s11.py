"""Issue 24 (session 11): a directory named `tools` (library_facts.toml `[switches] tool-dirs`)
holds an engine's offline tools, not serving code: a calibration script that feeds a model
batches. Its files are cold whole, as a benchmark's (toolpaths.py); a directory whose name only
has the word (`responses_tools/`) and a file named so are not."""

from __future__ import annotations

from test_lint_scope import lint_package, where
from test_lint_scope_once import cold_reasons

# a calibration script: a `forward_loop` (a per-step root's name) that reads a model's outputs back
CALIBRATE = """
    import torch

    def main(model, batches):
        def forward_loop(m):
            for batch in batches:
                out = m(batch.cuda())
                print(out.abs().max().item())
        return forward_loop
"""


def test_a_script_in_a_tools_directory_is_cold(tmp_path):
    files = {"tools/calibrate.py": CALIBRATE}
    assert where(lint_package(tmp_path, files)) == []
    cold = cold_reasons(lint_package(tmp_path, files, include_cold=True))
    assert "tool that is not serving (`tools`)" in cold[("pkg/tools/calibrate.py", 8)], cold


def test_a_directory_or_file_only_named_with_the_word_stays(tmp_path):
    # INVALID twins: `responses_tools/` (serving code) and a module `tools.py`
    for index, name in enumerate(("responses_tools/calibrate.py", "tools.py")):
        (tmp_path / str(index)).mkdir()
        found = where(lint_package(tmp_path / str(index), {name: CALIBRATE}))
        assert any(line == 8 for _path, line, _code in found), (name, found)
