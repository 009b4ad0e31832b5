"""The lint engine: suppressions, configuration, cache, robustness, the cross-file rule,
parallel runs and fingerprints."""

from __future__ import annotations

import os
import textwrap
import time

import pytest

from syncscope.lint.config import ConfigError, load_config
from syncscope.lint.engine import lint_paths

from lint_helpers import codes, lint_source, make_config

ITEM = "import torch\ndef step(x: torch.Tensor):\n    return x.sum().item(){comment}\n"


# -- suppressions ---------------------------------------------------------------------------
@pytest.mark.parametrize("comment", ["  # noqa: SYN201", "  # noqa", "  # NOQA:SYN2",
                                     "  # syncscope: ignore[SYN201] host copy is tiny here"])
def test_suppression_comments(tmp_path, comment):
    run = lint_source(tmp_path, ITEM.format(comment=comment))
    assert codes(run) == []


def test_suppression_of_another_code_keeps_finding_and_warns(tmp_path):
    run = lint_source(tmp_path, ITEM.format(comment="  # noqa: SYN202"))
    assert sorted(codes(run)) == ["SYN201", "SYN900"]
    warning = [f for f in run.findings if f.code == "SYN900"][0]
    assert warning.level == "warning" and "SYN202" in warning.message and warning.site.line == 3


def test_unused_suppressions(tmp_path):
    source = "def f(n):\n    return n + 1  # syncscope: ignore\n\ndef g(n):\n    return n  # noqa: SYN101, E501\n\ndef h(n):\n    return n  # noqa\n"
    run = lint_source(tmp_path, source)
    assert [(f.code, f.site.line) for f in run.findings] == [("SYN900", 2), ("SYN900", 5)]
    assert "E501" not in run.findings[1].message  # other tools' codes are not ours to judge


def test_suppression_on_first_line_of_multiline_statement(tmp_path):
    source = "import torch\ndef f(x: torch.Tensor):\n    y = (  # noqa: SYN201\n        x.sum()\n        .item()\n    )\n"
    assert codes(lint_source(tmp_path, source)) == []


# -- configuration --------------------------------------------------------------------------
SAMPLE = textwrap.dedent("""\
    import torch
    def step(x: torch.Tensor, lens: torch.Tensor):
        n = x.sum().item()
        torch.cuda.synchronize()
        return lens.tolist()
    """)


def _project(tmp_path, config_text: str, source: str = SAMPLE, name: str = "pkg/mod.py"):
    (tmp_path / "pyproject.toml").write_text(config_text)
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    return load_config(str(tmp_path)), path


def test_select_and_ignore_from_pyproject(tmp_path):
    config, path = _project(tmp_path, '[tool.syncscope.lint]\nselect = ["SYN2"]\nignore = ["SYN202"]\n')
    run = lint_paths([str(path)], config, use_cache=False)
    assert codes(run) == ["SYN201"]


def test_more_specific_select_wins_over_ignore(tmp_path):
    config, path = _project(tmp_path, '[tool.syncscope.lint]\nignore = ["SYN2"]\nextend-select = ["SYN202"]\n')
    assert sorted(codes(lint_paths([str(path)], config, use_cache=False))) == ["SYN202", "SYN501"]


def test_per_file_ignores(tmp_path):
    config, path = _project(tmp_path, '[tool.syncscope.lint.per-file-ignores]\n"pkg/*" = ["SYN5"]\n')
    assert sorted(codes(lint_paths([str(path)], config, use_cache=False))) == ["SYN201", "SYN202"]


def test_scope_patterns_and_all_functions(tmp_path):
    config, path = _project(tmp_path, '[tool.syncscope.lint]\nextend-skip-functions = ["step"]\n')
    assert codes(lint_paths([str(path)], config, use_cache=False)) == []
    source = "import torch\nx = torch.ones(3).cuda()\nprint(x.sum().item())\nclass A:\n    def __init__(self, t: torch.Tensor):\n        self.n = t.item()\n"
    config, path = _project(tmp_path, "", source)
    assert codes(lint_paths([str(path)], config, use_cache=False)) == []  # runs once: skipped
    config.all_functions = True
    found = lint_paths([str(path)], config, use_cache=False)
    assert [(f.code, f.site.line) for f in found.findings] == [("SYN403", 2), ("SYN201", 3), ("SYN201", 6)]


def test_host_suffixes_and_syncing_properties(tmp_path):
    source = "def build(self, meta, lens_hostbuf):\n    a = lens_hostbuf.tolist()\n    return meta.total_len_lazy\n"
    config, path = _project(tmp_path, '[tool.syncscope.lint]\nhost-suffixes = ["_hostbuf"]\n'
                                      'syncing-properties = ["meta.total_len_lazy"]\n', source)
    run = lint_paths([str(path)], config, use_cache=False)
    assert [(f.code, f.site.line) for f in run.findings] == [("SYN301", 3)]


def test_bad_config_is_an_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.syncscope.lint]\nselct = ["SYN"]\n')
    with pytest.raises(ConfigError, match="selct"):
        load_config(str(tmp_path))
    (tmp_path / "pyproject.toml").write_text('[tool.syncscope.lint]\nall-functions = "yes"\n')
    with pytest.raises(ConfigError, match="all-functions"):
        load_config(str(tmp_path))


# -- cache ------------------------------------------------------------------------------------
def test_cache_reuses_and_invalidates_on_change(tmp_path):
    config, path = _project(tmp_path, "")
    other = tmp_path / "pkg" / "other.py"
    other.write_text("import torch\ndef forward(x: torch.Tensor):\n    return x\n")
    first = lint_paths([str(tmp_path / "pkg")], config)
    assert (first.parsed, first.cached) == (2, 0)
    assert os.path.isdir(tmp_path / ".syncscope_cache")
    second = lint_paths([str(tmp_path / "pkg")], config)
    assert (second.parsed, second.cached) == (0, 2)
    assert [f.fingerprint for f in second.findings] == [f.fingerprint for f in first.findings]
    other.write_text("import torch\ndef forward(x: torch.Tensor):\n    return x.cpu()\n")
    third = lint_paths([str(tmp_path / "pkg")], config)
    assert (third.parsed, third.cached) == (1, 1)
    assert "SYN203" in codes(third)
    config.host_suffixes = config.host_suffixes + ["_x"]  # a different analysis: a different cache
    assert lint_paths([str(tmp_path / "pkg")], config).parsed == 2


# -- never crash ------------------------------------------------------------------------------
def test_broken_files_get_a_diagnostic_each_and_the_run_goes_on(tmp_path):
    (tmp_path / "syntax.py").write_text("import torch\ndef f(:\n    pass\n")
    (tmp_path / "latin.py").write_bytes(b"import torch\nname = '\xe9t\xe9'\n")
    (tmp_path / "cookie.py").write_bytes(b"# -*- coding: latin-1 -*-\nimport torch\ndef f(x: torch.Tensor):\n    s = '\xe9'\n    return x.item()\n")
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "nul.py").write_bytes(b"import torch\nx = 1\x00\n")
    lines = ["import torch", "def f(x: torch.Tensor):"] + [f"    y{i} = x + {i}" for i in range(50_000)] + ["    return y0.item()"]
    (tmp_path / "big.py").write_text("\n".join(lines) + "\n")
    (tmp_path / "good.py").write_text(ITEM.format(comment=""))
    config = make_config(tmp_path)
    started = time.perf_counter()
    run = lint_paths([str(tmp_path)], config, use_cache=False, jobs=2)
    elapsed = time.perf_counter() - started
    by_file = {}
    for f in run.findings:
        by_file.setdefault(f.site.path, []).append((f.code, f.site.line))
    assert by_file["syntax.py"] == [("SYN002", 2)]
    assert by_file["latin.py"][0][0] == "SYN001"
    assert by_file["nul.py"][0][0] == "SYN002"
    assert by_file["cookie.py"] == [("SYN201", 5)]
    assert by_file["big.py"] == [("SYN201", 50_003)]
    assert by_file["good.py"] == [("SYN201", 3)]
    assert "empty.py" not in by_file
    assert run.internal_errors == []
    assert elapsed < 60


def test_internal_error_is_reported_not_raised(tmp_path, monkeypatch):
    from syncscope.lint.rules.syn201 import ItemOnDevice

    def boom(self, ctx, call):
        raise RuntimeError("rule bug")

    monkeypatch.setattr(ItemOnDevice, "on_call", boom)
    import syncscope.lint.worker as worker

    monkeypatch.setattr(worker, "_REGISTRY", None)
    run = lint_source(tmp_path, ITEM.format(comment=""))
    monkeypatch.setattr(worker, "_REGISTRY", None)
    assert codes(run) == ["SYN003"] and run.internal_errors


# -- cross-file, parallel, fingerprints -------------------------------------------------------
def test_helper_rule_across_files(tmp_path):
    pkg = tmp_path / "engine"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "ops" / "__init__.py").write_text("")
    (pkg / "ops" / "index.py").write_text(
        "import torch\ndef prepare_chunk_indices(cu_seqlens: torch.Tensor, chunk_size: int):\n"
        "    return [n // chunk_size for n in cu_seqlens.tolist()]\n")
    (pkg / "builder.py").write_text(
        "import torch\nfrom .ops.index import prepare_chunk_indices\n\n"
        "class GDNBuilder:\n    def build(self, cu_seqlens: torch.Tensor, cu_seqlens_cpu: torch.Tensor):\n"
        "        host = prepare_chunk_indices(cu_seqlens_cpu, 64)\n"
        "        return prepare_chunk_indices(cu_seqlens, 64)\n")
    run = lint_paths([str(pkg)], make_config(tmp_path), use_cache=False, jobs=2)
    helper = [f for f in run.findings if f.code == "SYN601"]
    assert [(f.site.path, f.site.line, f.site.function) for f in helper] == [("engine/builder.py", 7, "GDNBuilder.build")]
    assert "engine/ops/index.py:3 SYN202" in helper[0].message


def test_parallel_run_equals_serial_run(tmp_path):
    for i in range(6):
        (tmp_path / f"m{i}.py").write_text(SAMPLE.replace("step", f"step{i}"))
    config = make_config(tmp_path)
    serial = lint_paths([str(tmp_path)], config, use_cache=False, jobs=1)
    parallel = lint_paths([str(tmp_path)], config, use_cache=False, jobs=2)
    assert [(f.site, f.message) for f in serial.findings] == [(f.site, f.message) for f in parallel.findings]
    assert len(serial.findings) == 18


def test_fingerprints_survive_unrelated_edits(tmp_path):
    before = lint_source(tmp_path, SAMPLE)
    after = lint_source(tmp_path, "# a new comment\n\nimport os\n" + SAMPLE)
    assert [f.site.line + 3 for f in before.findings] == [f.site.line for f in after.findings]
    assert [f.fingerprint for f in before.findings] == [f.fingerprint for f in after.findings]
    twice = lint_source(tmp_path, SAMPLE.replace("    n = x.sum().item()\n", "    n = x.sum().item()\n    n = x.sum().item()\n"))
    prints = [f.fingerprint for f in twice.findings if f.code == "SYN201"]
    assert len(set(prints)) == 2  # identical lines in one function are distinct sites


def test_host_fields_declared_in_another_file(tmp_path):
    """`batch.num_tokens` is declared `np.ndarray` in another module's class: not a sync."""
    (tmp_path / "batch.py").write_text(
        "from dataclasses import dataclass\nimport numpy as np\nimport torch\n\n"
        "@dataclass\nclass InputBatch:\n    num_tokens: np.ndarray\n    token_ids: torch.Tensor\n")
    (tmp_path / "runner.py").write_text(
        "import torch\nfrom batch import InputBatch\n\n"
        "def prepare(input_batch: InputBatch):\n"
        "    a = input_batch.num_tokens.max().item()\n"
        "    b = input_batch.token_ids.max().item()\n")
    run = lint_paths([str(tmp_path)], make_config(tmp_path), use_cache=False, jobs=1)
    assert [(f.code, f.site.line) for f in run.findings] == [("SYN201", 6)]


def test_recall_on_the_seed_reference_implementations():
    """reference_impl/ marks every line of its naive builders that syncs with `# sync: <kind>`.
    The linter must find most of them (the lazy `seq_lens_cpu` property is found where it is read,
    by SYN301, not inside the property, whose body runs once per object)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folder = os.path.join(root, "reference_impl")
    if not os.path.isdir(folder):
        pytest.skip("no reference_impl/")
    marked = set()
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py") and name != "__init__.py":
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                for number, line in enumerate(handle, start=1):
                    if "# sync:" in line:
                        marked.add((f"reference_impl/{name}", number))
    run = lint_paths([folder], make_config(root), use_cache=False, jobs=1)
    found = {(f.site.path, f.site.line) for f in run.findings}
    assert marked, "no # sync: markers found"
    recall = len(marked & found) / len(marked)
    assert recall >= 0.8, f"found {sorted(marked & found)}, missed {sorted(marked - found)}"
    assert any(f.code == "SYN301" for f in run.findings)
    # with the default per-step scope the same lines are found once the project names its
    # step functions that no default root reaches (the runner's `finish`, the kernel wrapper
    # a model's forward would call): issue 24's "nothing lost"
    scoped = lint_paths([folder], make_config(root, include_cold=False, hot_roots=["*.finish", "gdn_chunk_prefill"]),
                        use_cache=False, jobs=1)
    assert {(f.site.path, f.site.line) for f in scoped.findings} & marked == found & marked


def test_private_helpers_called_only_from_cold_code_are_cold(tmp_path):
    source = (
        "import torch\n\n"
        "class Tables:\n"
        "    def __init__(self, tables, device):\n"
        "        self.device = device\n"
        "        self.ptrs = self._make_ptrs(tables)\n\n"
        "    def _make_ptrs(self, tables):\n"
        "        return torch.tensor([t.data_ptr() for t in tables], device=self.device)\n\n"
        "    def _lens(self, n):\n"
        "        return torch.tensor([n], device=self.device)\n\n"
        "    def _warm(self, n):\n"
        "        return torch.tensor([n], device=self.device)\n\n"
        "    def warmup(self):\n"
        "        self._warm(1)\n"
        "        self._lens(1)\n\n"
        "    def step(self, n):\n"
        "        return self._lens(n)\n\n"
        "def public_setup(x: torch.Tensor):\n"
        "    return x.item()\n\n"
        "def load_everything(x):\n"
        "    return public_setup(x)\n"
    )
    run = lint_source(tmp_path, source)
    # _make_ptrs and _warm: only cold code calls them. _lens: step (hot) calls it too.
    # public_setup: public, so callers outside the file may exist: still linted.
    # step's call of _lens is also reported at the call (SYN602, whole-program summaries)
    assert [(f.code, f.site.function) for f in run.findings] == [
        ("SYN401", "Tables._lens"), ("SYN602", "Tables.step"), ("SYN201", "public_setup")]


# -- never crash, whatever the input ----------------------------------------------------------
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncscope.lint.rules import ALL_RULES
from syncscope.lint.rules.base import Invalid
from syncscope.lint.worker import analyze_bytes

_SOURCES = [e.code if isinstance(e, Invalid) else e for r in ALL_RULES for e in list(r.VALID) + list(r.INVALID)]
_FRAGMENTS = ["(", ")", "[", "]", ":", "\n", "    ", "if ", "x.item()", "def g(", "'", '"""', "\\", "#", "lambda",
              "\t", "\x00", "é", "= ", "async ", "await ", "*", "@", "torch.tensor(", ".to(", "mask"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_SOURCES), st.lists(st.tuples(st.integers(0, 400), st.sampled_from(_FRAGMENTS),
                                                     st.integers(0, 3)), max_size=4))
def test_mangled_sources_never_raise(source, edits):
    """Random insertions and deletions in real examples: every outcome is findings or a
    diagnostic, never an exception or an internal error, in both parse paths."""
    text = source
    for position, fragment, delete in edits:
        position = min(position, len(text))
        text = text[:position] + fragment + text[position + delete:]
    config = make_config(".")
    for keep_tree in (False, True):
        outcome = analyze_bytes(text.encode("utf-8", "surrogatepass"), "m", False, config, keep_tree=keep_tree)
        result = outcome[0] if keep_tree else outcome
        assert result.internal_error is None, result.internal_error


def test_progress_is_reported_on_long_runs(tmp_path):
    class Recorder:
        def __init__(self):
            self.total, self.done = None, 0

        def start(self, total):
            self.total = total

        def advance(self, n):
            self.done += n

    for i in range(55):
        (tmp_path / f"m{i}.py").write_text("import torch\ndef f(x: torch.Tensor):\n    return x + 1\n")
    recorder = Recorder()
    lint_paths([str(tmp_path)], make_config(tmp_path), use_cache=False, jobs=2, progress=recorder)
    assert (recorder.total, recorder.done) == (55, 55)
    short = Recorder()
    lint_paths([str(tmp_path / "m1.py")], make_config(tmp_path), use_cache=False, progress=short)
    assert short.total is None  # a short run draws no bar


def test_the_command_progress_bar_draws_with_rich():
    from rich.console import Console

    from syncscope.commands.lint import _Bar

    import io

    out = io.StringIO()
    bar = _Bar(Console(file=out, force_terminal=True, width=80))
    bar.start(3)
    bar.advance(3)
    bar.close()
    assert bar.progress.tasks[0].completed == 3
    assert "linting" in out.getvalue() and "3/3" in out.getvalue()


def test_cache_uses_stat_first_and_content_second(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import torch\ndef f(x: torch.Tensor):\n    return x.cpu()\n")
    config = make_config(tmp_path)
    assert lint_paths([str(path)], config).parsed == 1
    os.utime(path, ns=(1, 1))  # touched, content unchanged: found by content hash
    again = lint_paths([str(path)], config)
    assert (again.parsed, again.cached, codes(again)) == (0, 1, ["SYN203"])
    path.write_text("import torch\ndef f(x: torch.Tensor):\n    return x.cuda()\n")  # same size
    os.utime(path, ns=(2, 2))
    changed = lint_paths([str(path)], config)
    assert (changed.parsed, codes(changed)) == (1, [])


def test_helpers_fed_host_data_by_every_caller_are_not_flagged(tmp_path):
    (tmp_path / "chunks.py").write_text(
        "import torch\n\ndef split_chunks(lens: torch.Tensor, width: int):\n"
        "    return [int(lens[i]) for i in range(len(lens))]\n\n"
        "def other(lens: torch.Tensor):\n    return int(lens[0])\n")
    (tmp_path / "builder.py").write_text(
        "import torch\nfrom chunks import split_chunks, other\n\n"
        "def build(seq_lens_cpu: torch.Tensor, seq_lens: torch.Tensor):\n"
        "    a = split_chunks(seq_lens_cpu, 4)\n"
        "    b = split_chunks(lens=seq_lens_cpu[:4], width=4)\n"
        "    return other(seq_lens_cpu), other(seq_lens)\n")
    run = lint_paths([str(tmp_path)], make_config(tmp_path), use_cache=False, jobs=1)
    # split_chunks: both calls pass host data; other: one call passes a device tensor
    assert [(f.code, f.site.path, f.site.function) for f in run.findings] == [
        ("SYN601", "builder.py", "build"), ("SYN205", "chunks.py", "other")]
