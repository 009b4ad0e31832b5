"""The whole-program pass's scans of the files' text keep each file's answer by its content hash
(text_scans.py): an edit that reruns the pass reads only the edited files again, and reports
what a run without the cache reports.

The package is test_lint_optin_s11's: a manager built only behind a switch off by default, so
its sync is cold; the scans that decide it (which files read the switch, what each builds
behind it, where the tree constructs the class) are the ones kept.
"""

from __future__ import annotations

import textwrap

from lint_helpers import make_config
from syncscope.lint.engine import lint_paths
from syncscope.lint.text_scans import TextScans
from test_lint_field_configs import SUBCLASS, base, model
from test_lint_host_facts import INPUTS
from test_lint_optin_s11 import package

# the runner also builds the manager where no switch is read: the class is built by default
BUILT_ANYWAY = """
    def execute_model(self, grid: torch.Tensor):
        if self.manager is None:
            self.manager = GraphManager(self.device)
"""


def write(root, files: dict[str, str]) -> None:
    root.mkdir(exist_ok=True)
    (root / "__init__.py").write_text("")
    for name, source in files.items():
        (root / name).write_text(textwrap.dedent(source))


def report(tmp_path, root, use_cache: bool, paths=None) -> list[tuple]:
    run = lint_paths([str(p) for p in (paths or [root])], make_config(tmp_path), use_cache=use_cache, jobs=1)
    return sorted((f.site.path, f.site.line, f.code, f.message, f.cold) for f in run.findings)


def reading(monkeypatch) -> list[str]:
    """The files the pass's scans read from now on."""
    read: list[str] = []
    original = TextScans._bytes

    def recorded(self, path):
        read.append(path.rsplit("/", 1)[-1])
        return original(self, path)

    monkeypatch.setattr(TextScans, "_bytes", recorded)
    return read


def manager_findings(found: list[tuple]) -> list[tuple]:
    return [f for f in found if f[0] == "pkg/manager.py"]


def test_an_edit_that_builds_the_class_by_default_is_read_alone_and_reported(tmp_path, monkeypatch):
    root = tmp_path / "pkg"
    files = package()
    write(root, files)
    before = report(tmp_path, root, use_cache=True)
    assert manager_findings(before) and all(f[4] and "graph_encoder" in f[4] for f in manager_findings(before))

    # VALID: the edit adds a construction outside the switch; the rerun scans runner.py alone
    # (the other files' answers come from the cache) and the manager's sync is now per step
    files["runner.py"] = files["runner.py"].replace(
        """
        def execute_model(self, grid: torch.Tensor):
""", BUILT_ANYWAY)
    write(root, files)
    read = reading(monkeypatch)
    staged = report(tmp_path, root, use_cache=True, paths=[root / "runner.py"])
    assert read and set(read) == {"runner.py"}
    whole = report(tmp_path, root, use_cache=False)
    assert [f for f in whole if f[0] == "pkg/runner.py"] == staged
    assert manager_findings(whole) and not any(f[4] for f in manager_findings(whole))
    assert report(tmp_path, root, use_cache=True) == whole


# builds the manager behind a second switch, on by default until the edit below turns it off
BUILDER = """
    from pkg.manager import GraphManager

    class Builder:
        def __init__(self, config):
            self.compilation_config = config.compilation_config

        def make(self, device):
            if self.compilation_config.second_switch:
                return GraphManager(device)
            return None
"""


def test_a_new_pattern_reads_every_file_again(tmp_path, monkeypatch):
    # INVALID twin of the answers kept: an edit of the config alone turns a second switch off, so
    # the unchanged builder now reads an off switch and builds the manager only behind it. Its
    # answers for the old switches do not hold for the new ones: every file is read again (with
    # its answers kept under the old pattern, the builder's construction would still count as a
    # default one and the manager's sync would stay per step)
    root = tmp_path / "pkg"
    files = {**package(), "builder.py": BUILDER}
    files["config.py"] = files["config.py"].replace("graph_encoder: bool = False",
                                                    "graph_encoder: bool = False\n        second_switch: bool = True")
    write(root, files)
    before = report(tmp_path, root, use_cache=True)
    assert manager_findings(before) and not any(f[4] for f in manager_findings(before))

    files["config.py"] = files["config.py"].replace("second_switch: bool = True", "second_switch: bool = False")
    write(root, files)
    read = reading(monkeypatch)
    staged = report(tmp_path, root, use_cache=True, paths=[root / "config.py"])
    assert {"builder.py", "manager.py", "runner.py", "config.py"} <= set(read)
    whole = report(tmp_path, root, use_cache=False)
    assert [f for f in whole if f[0] == "pkg/config.py"] == staged
    assert manager_findings(whole) and all(f[4] and "second_switch" in f[4] for f in manager_findings(whole))
    assert report(tmp_path, root, use_cache=True) == whole


def test_without_a_cache_every_file_is_scanned(tmp_path, monkeypatch):
    root = tmp_path / "pkg"
    write(root, package())
    read = reading(monkeypatch)
    found = report(tmp_path, root, use_cache=False)
    assert manager_findings(found) and all(f[4] for f in manager_findings(found))
    assert {"config.py", "manager.py", "runner.py"} <= set(read)


def test_a_module_cached_with_inherited_fields_is_answered_from_the_cache_too(tmp_path, monkeypatch):
    # a model that takes over another module's `keep_on_cpu` fields is cached under its content
    # hash and those fields (engine.py): its scans' answers are kept by its content alone
    root = tmp_path / "pkg"
    files = {**package(), "inputs.py": INPUTS, "omni.py": base(True), "model.py": model(SUBCLASS)}
    write(root, files)
    report(tmp_path, root, use_cache=True)
    files["runner.py"] = files["runner.py"].replace(
        """
        def execute_model(self, grid: torch.Tensor):
""", BUILT_ANYWAY)
    write(root, files)
    read = reading(monkeypatch)
    report(tmp_path, root, use_cache=True, paths=[root / "runner.py"])
    assert read and set(read) == {"runner.py"}
