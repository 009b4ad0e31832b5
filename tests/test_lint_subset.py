"""Subset linting (issue 24): `syncscope lint one_file.py` inside a project reports for that
file exactly what a whole-tree run reports for it, so the pre-commit hook, which passes only the
staged files, still sees a sync in a helper of another module."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from syncscope.lint.config import load_config
from syncscope.lint.engine import lint_paths

FILES = {
    "pkg/__init__.py": "",
    "pkg/ops/__init__.py": "",
    "pkg/ops/chunks.py": """
        import torch

        def chunk_lens(cu_seqlens):
            return (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
    """,
    "pkg/model.py": """
        import torch
        from pkg.ops.chunks import chunk_lens

        class Attention(torch.nn.Module):
            def forward(self, x: torch.Tensor, cu_seqlens: torch.Tensor):
                return x.split(chunk_lens(cu_seqlens))
    """,
    "pkg/other.py": """
        import torch

        class Mlp(torch.nn.Module):
            def forward(self, x: torch.Tensor):
                return x.sum().item()
    """,
}


def make_project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.syncscope.lint]\n")
    for name, source in FILES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return load_config(str(tmp_path))


def found(run, path=None):
    return sorted((f.site.path, f.site.line, f.code, f.message) for f in run.findings
                  if path is None or f.site.path == path)


def test_one_file_reports_what_the_whole_tree_reports_for_it(tmp_path):
    config = make_project(tmp_path)
    whole = lint_paths([str(tmp_path)], config, use_cache=False, jobs=1)
    alone = lint_paths([str(tmp_path / "pkg" / "model.py")], config, use_cache=False, jobs=1)
    assert found(alone) == found(whole, "pkg/model.py")
    assert [code for _, _, code, _ in found(alone)] == ["SYN601"]  # the sync is in pkg/ops/chunks.py
    assert alone.files == 1


def test_the_other_files_come_from_the_cache(tmp_path):
    config = make_project(tmp_path)
    lint_paths([str(tmp_path)], config, jobs=1)
    again = lint_paths([str(tmp_path / "pkg" / "model.py")], config, jobs=1)
    assert (again.parsed, again.cached) == (0, len([n for n in FILES if n.endswith(".py")]))
    assert [f.code for f in again.findings] == ["SYN601"]


def test_the_pre_commit_hooks_command_sees_across_files(tmp_path):
    make_project(tmp_path)
    with open(os.path.join(os.path.dirname(__file__), "..", ".pre-commit-hooks.yaml")) as handle:
        entry = next(line.split(":", 1)[1].strip() for line in handle if line.strip().startswith("entry:"))
    assert entry.startswith("syncscope lint")
    command = [sys.executable, "-m", "syncscope"] + entry.split()[1:] + ["--output-format", "concise", "pkg/model.py"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 1, result.stderr
    assert "pkg/model.py:7" in result.stdout and "SYN601" in result.stdout
    assert "pkg/ops/chunks.py" in result.stdout  # the chain's root, in the other module


# -- a staged file edited after a whole run (lineshift.py) ----------------------------------------

def _edit(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    stat = path.stat()  # a new size or mtime, as after an editor's save
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))


def _staged(tmp_path, config):
    return lint_paths([str(tmp_path / "pkg" / "ops" / "chunks.py"), str(tmp_path / "pkg" / "model.py")],
                      config, jobs=1)


def _staged_of_whole(tmp_path, config):
    """What a whole run without the cache reports for the two staged files."""
    whole = lint_paths([str(tmp_path)], config, use_cache=False, jobs=1)
    return [f for f in found(whole) if f[0] in ("pkg/model.py", "pkg/ops/chunks.py")]


def _counting_solves(monkeypatch):
    from syncscope.lint import engine

    calls = []
    real = engine.solve

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(engine, "solve", counted)
    return calls


MOVED_CHUNKS = """
    # a comment and a blank line above: every line below moves down by three

    import torch

    def chunk_lens(cu_seqlens):
        # why: the host needs the lengths to split
        return (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()
"""


def test_an_edit_that_only_moves_lines_reuses_the_pass_and_reports_what_a_whole_run_does(tmp_path, monkeypatch):
    config = make_project(tmp_path)
    lint_paths([str(tmp_path)], config, jobs=1)
    _edit(tmp_path, "pkg/ops/chunks.py", MOVED_CHUNKS)
    _edit(tmp_path, "pkg/model.py", textwrap.dedent(FILES["pkg/model.py"]) + "\n# staged edit\n")
    solves = _counting_solves(monkeypatch)
    staged = _staged(tmp_path, config)
    assert solves == []  # moved, not solved again
    monkeypatch.undo()
    assert found(staged) == _staged_of_whole(tmp_path, config)
    # the caller's message names the helper's sync on its new line
    assert [(path, line, code) for path, line, code, _ in found(staged)] == [
        ("pkg/model.py", 7, "SYN601"), ("pkg/ops/chunks.py", 8, "SYN202")]
    assert "pkg/ops/chunks.py:8 " in found(staged)[0][3]


def test_an_edit_in_the_staged_helper_that_removes_or_adds_a_sync_reaches_the_staged_caller(tmp_path, monkeypatch):
    config = make_project(tmp_path)
    lint_paths([str(tmp_path)], config, jobs=1)
    _edit(tmp_path, "pkg/ops/chunks.py", """
        import torch

        def chunk_lens(cu_seqlens):
            return cu_seqlens[1:] - cu_seqlens[:-1]
    """)
    solves = _counting_solves(monkeypatch)
    staged = _staged(tmp_path, config)
    assert solves == [1]  # the helper's facts changed: the pass ran again
    monkeypatch.undo()
    assert found(staged) == _staged_of_whole(tmp_path, config) == []
    # the sync comes back, on another line than before: found at the caller again
    _edit(tmp_path, "pkg/ops/chunks.py", MOVED_CHUNKS)
    staged = _staged(tmp_path, config)
    assert found(staged) == _staged_of_whole(tmp_path, config)
    assert [code for _, _, code, _ in found(staged)] == ["SYN601", "SYN202"]


def test_an_edit_that_adds_a_call_is_not_taken_for_moved_lines(tmp_path):
    from syncscope.lint.lineshift import line_map
    from syncscope.lint.worker import analyze_bytes

    config = make_project(tmp_path)
    source = textwrap.dedent(FILES["pkg/model.py"])

    def analyzed(text):
        return analyze_bytes(text.encode(), "pkg.model", False, config)

    before = analyzed(source)
    assert line_map(before, analyzed(source + "\n# a comment\n")) == {5: 5, 6: 6, 7: 7}
    moved = line_map(before, analyzed(source.replace("    def forward", "    # why\n\n    def forward")))
    assert moved == {5: 5, 6: 8, 7: 9}  # class, def, return
    assert line_map(before, analyzed(source.replace("return x.split", "x = x.relu()\n        return x.split"))) is None
    # same lines, another column: not a move either
    assert line_map(before, analyzed(source.replace("return x.split(", "return  x.split("))) is None


def test_moving_the_pass_output_rewrites_lines_and_messages_or_gives_up():
    from syncscope.lint.lineshift import shift_solution
    from syncscope.lint.records import ChainStep, FileFinding

    chain = (ChainStep("a.py", 10, "a.f", "calls `g`"), ChainStep("b.py", 5, "b.g", "SYN201 `x.item()`"))
    ruled = "constant arguments rule out the branch of `g` that syncs (line 4)"
    finding = FileFinding("SYN602", 10, 5, 10, 11, "f", "calls `g`, which syncs 1 call down: b.py:5 SYN201 (via g())",
                          None, "error", chain, cold=ruled)
    solved = ({"a.py": [finding]}, set(), set(), {"functions": {"a.f": (("a.f", "a.py", 9),)}, "cold": {}})
    # the caller's file moved: its lines move, the guard's line in b.py stays as it is
    extra, _, _, scope = shift_solution(solved, {"a.py": {9: 12, 10: 13, 11: 14}})
    assert (extra["a.py"][0].line, extra["a.py"][0].stmt_end, extra["a.py"][0].chain[0].line) == (13, 14, 13)
    assert extra["a.py"][0].cold == ruled and scope["functions"]["a.f"] == (("a.f", "a.py", 12),)
    # the root's file moved: the message names its new line
    extra, _, _, _ = shift_solution(({"a.py": [finding._replace(cold=None)]},) + solved[1:], {"b.py": {4: 6, 5: 7}})
    assert " down: b.py:7 SYN201" in extra["a.py"][0].message
    # the guarded function's file moved: its line in the reason is not rewritten, so no move
    assert shift_solution(solved, {"b.py": {4: 6, 5: 7}}) is None
    # a line the map does not know: no move
    assert shift_solution(solved, {"a.py": {9: 12, 10: 13}}) is None


CONFIG_NONE = """
    import torch

    def coordinate(cfg, n):
        if cfg.parallel.size == 1:
            return False, None
        return True, torch.full((2,), n)

    def set_context(cfg, counts=None, n=0):
        if counts is None and cfg.parallel.size > 1:
            return torch.tensor([n]).cuda().sum().item()
        return counts

    class Runner(torch.nn.Module):
        def forward(self, x: torch.Tensor):
            _, counts = coordinate(self.cfg, 4)
            return set_context(self.cfg, counts, 4)
"""


def _moves(tmp_path, module: str, source: str, before_marker: str, table, changed: tuple[str, str]):
    """(line_map of an edit that adds two lines before `before_marker`, line_map of one that
    replaces `changed[0]` by `changed[1]`), after checking that `table(result)`, the table the
    test is about, holds something."""
    from syncscope.lint.lineshift import line_map
    from syncscope.lint.worker import analyze_bytes

    config = make_project(tmp_path)
    source = textwrap.dedent(source)

    def analyzed(text):
        return analyze_bytes(text.encode(), module, False, config)

    before = analyzed(source)
    assert table(before)
    moved = line_map(before, analyzed(source.replace(before_marker, f"    # why\n\n{before_marker}")))
    return moved, line_map(before, analyzed(source.replace(*changed)))


def test_an_edit_that_only_moves_lines_keeps_the_none_config_facts_a_move(tmp_path):
    """confignone's per-file table holds lines (guards' ranges, calls' positions, sources' call
    lines): an edit that only moves them is still a move, one that changes a test is not."""
    moved, changed = _moves(tmp_path, "pkg.runner", CONFIG_NONE, "    def forward", lambda r: r.none_config,
                            ("size > 1", "size > 2"))
    assert moved is not None and all(new == old + 2 for old, new in moved.items() if old >= 16)
    assert changed is None


SWITCHED = """
import torch
import vllm.envs as envs


class Runner:
    def step(self, x):
        if envs.VLLM_DEBUG_DUMP:
            print(x.sum().item())
        return x
"""


def test_an_edit_that_only_moves_lines_keeps_the_switched_spans_a_move(tmp_path):
    """switch_facts holds the lines of `if` bodies on a switch (env_switches.env_facts): an edit
    that only moves them is still a move, so the staged file's run reuses the pass (session 36's
    switch names put such spans in vLLM's `gpu_input_batch.py`, and every edit of it reran the
    pass: 12-13 s instead of under 1 s). One that changes the switch is not a move."""
    moved, changed = _moves(tmp_path, "pkg.runner", SWITCHED, "    def step", lambda r: r.switch_facts[4],
                            ("VLLM_DEBUG_DUMP", "VLLM_DEBUG_TRACE"))
    assert moved is not None and moved.get(9) == 11
    assert changed is None


ELEMENTS = """
from dataclasses import dataclass, field


class Renaming:
    def rename(self, key):
        return key


@dataclass
class Mapper:
    renamings: list[Renaming] = field(default_factory=list)

    def map(self, key):
        for renaming in self.renamings:
            key = renaming.rename(key)
        return key
"""


def test_an_edit_that_only_moves_lines_keeps_the_element_calls_a_move(tmp_path):
    """element_receivers' table holds each call's line: a move is still a move."""
    moved, changed = _moves(tmp_path, "pkg.mapper", ELEMENTS, "    def map", lambda r: r.element_calls,
                            ("renaming.rename(key)", "renaming.other(key)"))
    assert moved is not None and moved.get(16) == 18
    assert changed is None
