"""Shared by tests/test_fuzz_inputs.py and bench/fuzz.py: real input files of each kind, the
ways to damage them, and the contract every command must keep on damaged input.

The contract (docs/reliability.md): a command given a damaged file either gives a correct
result (exit 0 or 1, machine output that parses) or exits 2 with one line on stderr that starts
with `syncscope`; never a traceback, and an input it failed on is left byte for byte as it was.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

LINT_SOURCE = """\
import torch


def step(x: torch.Tensor, mask_cpu: torch.Tensor, lens: torch.Tensor):
    mask = mask_cpu.cuda(non_blocking=True)
    y = x[mask]
    n = lens.sum().item()
    torch.cuda.synchronize()
    return y, n
"""

CONFIG = """\
[tool.syncscope.lint]
select = ["SYN1", "SYN2"]
ignore = ["SYN105"]
all-functions = false
per-file-ignores = { "tests/*" = ["SYN2"] }
cache-dir = ".cache"

[[tool.syncscope.run.allow]]
path = "serve/*.py"
line = 12
kind = "item"
reason = "warm-up"
"""


def _events():
    from syncscope.events import Frame, HostSyncEvent

    out = []
    for i, (line, kind, fn) in enumerate([(7, "item", "step"), (9, "bool_mask_index", "step"), (30, "device_sync", "Model.forward")] * 3):
        site = Frame("serve/loop.py", line, fn)
        out.append(HostSyncEvent(kind=kind, api="Tensor.item", site=site, source=f"n = x{i}.item()", stack=(site,),
                                 thread="MainThread", pid=100, region="decode" if line == 7 else None, in_scope=line != 30,
                                 blocked_ns=1000 * (i + 1), ts_ns=i * 10))
    return out


def _report_with_bubble_window(meta: dict) -> dict:
    """A report with the top-level `bubbles` object (`run --bubbles`), its window attributed by
    the same pure function the GPU path uses, on a synthetic timeline (no GPU here)."""
    import dataclasses

    from syncscope.report.aggregate import build_report
    from syncscope.runtime.bubble_window import WindowResult
    from syncscope.runtime.bubbles import GpuActivity, SyncMark, attribute
    from syncscope.events import Frame
    from syncscope.runtime.recorder import Recorder

    rec = Recorder(device="cuda", root="/proj")
    acts, marks = [], []
    for i in range(3):
        t = i * 3_000_000
        acts.append(GpuActivity(0, 7, t, t + 1_000_000))
        rec.record("item", "Tensor.item", blocked_ns=20_000, stack=(Frame("serve/loop.py", 7, "step"),))
        marks.append(SyncMark(len(rec.events) - 1, t + 981_000, t + 1_001_000, t + 1_011_000))
    rec.events[:] = [dataclasses.replace(e, ts_ns=m.wait_end_ns) for e, m in zip(rec.events, marks)]
    window = WindowResult(attribute(acts, marks, (0, 9_000_000)), "program", 0, 0, marks, len(acts), {"open_ns": 1, "close_ns": 2, "analysis_ns": 3})
    return build_report(rec.events, {**meta, "device": "cuda"}, bubbles=window).to_json()


def make_seeds(directory: Path) -> dict[str, Path]:
    """Real files of every kind a command reads, written by syncscope's own writers."""
    from syncscope.ci import baseline as bl
    from syncscope.atomic import write_json_atomic
    from syncscope.report.aggregate import build_report

    directory.mkdir(parents=True, exist_ok=True)
    seeds = {}
    meta = {"device": "sim", "host": "h", "pid": 100, "status": "ok", "exit_code": 0, "command": ["serve.py"]}
    errors = [{"where": "cuda detector (Tensor.to)", "error": "ValueError: x", "count": 1}]
    seeds["report"] = directory / "report.json"
    write_json_atomic(str(seeds["report"]), build_report(_events(), meta, errors=errors).to_json())
    seeds["report2"] = directory / "report2.json"
    write_json_atomic(str(seeds["report2"]), build_report(_events()[:4], {**meta, "pid": 101}).to_json())
    seeds["report_bubbles"] = directory / "report-bubbles.json"
    write_json_atomic(str(seeds["report_bubbles"]), _report_with_bubble_window(meta))
    seeds["baseline"] = directory / "baseline.json"
    bl.save_baseline(bl.create(bl.load_observation(str(seeds["report"])), budget_slack=2.0, steps=3), str(seeds["baseline"]))

    from syncscope.lint import output
    from syncscope.lint.config import load_config
    from syncscope.lint.engine import lint_paths

    src = directory / "step.py"
    src.write_text(LINT_SOURCE)
    config = load_config(str(directory))
    run = lint_paths([str(src)], config, jobs=1, use_cache=False)
    seeds["lint_json"] = directory / "lint.json"
    with open(seeds["lint_json"], "w", encoding="utf-8") as fh:
        output.write_json(run.findings if hasattr(run, "findings") else list(run), fh)
    seeds["lint_baseline"] = directory / "lint-baseline.json"
    bl.save_baseline(bl.create(bl.load_observation(str(seeds["lint_json"]))), str(seeds["lint_baseline"]))
    seeds["config"] = directory / "pyproject.toml"
    seeds["config"].write_text(CONFIG)
    seeds["source"] = src
    return seeds


# -- damage ------------------------------------------------------------------------------------
HUGE = [10**400, -(10**400), 2**63, -1, 1e308, float("inf"), float("nan")]
WRONG = [None, True, 0, -7, 3.5, "", "x" * 5000, [], [1, "a"], {}, {"a": {"b": []}}] + HUGE


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:6]):
            yield from _paths(item, prefix + (index,))


def _parent(root, path):
    node = root
    for key in path[:-1]:
        node = node[key]
    return node


def damage_json(data: bytes, rng: random.Random, how: str) -> bytes:
    """One structural change to a JSON document: a key dropped, a value of the wrong type or a
    huge number put in, a list emptied or repeated. `how@key`: only inside the top-level `key`
    (`wrong_type@bubbles`: the bubble window object)."""
    doc = json.loads(data)
    if _damage_doc(doc, rng, how) is None:
        return data
    return json.dumps(doc).encode()  # NaN/Infinity written as Python does: not strict JSON either


def damage_toml(data: bytes, rng: random.Random, how: str) -> bytes:
    """The same structural changes to a TOML document (the config): a table where a string is
    expected (`tool = "x"`), a number for a list, an array of tables for a table, ..."""
    import tomllib

    doc = tomllib.loads(data.decode())
    if _damage_doc(doc, rng, how, toml=True) is None:
        return data
    return "\n".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in doc.items()).encode()


def _toml_key(key: str) -> str:
    return json.dumps(key, ensure_ascii=False)


def _toml_value(value) -> str:
    """Inline TOML (TOML's basic strings take JSON's escapes; integers beyond 64 bits and the
    like make a file tomllib refuses, which is a case too)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if value != value else "inf" if value == float("inf") else "-inf" if value == float("-inf") else repr(value)
    if isinstance(value, (int, str)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"


TOML_WRONG = [v for v in WRONG if v is not None] + [[{"a": "b"}], {"select": 3}]  # TOML has no null


def _damage_doc(doc, rng: random.Random, how: str, toml: bool = False):
    """Damage `doc` in place; None where it has nothing to damage."""
    wrong = TOML_WRONG if toml else WRONG
    how, _, under = how.partition("@")
    paths = [p for p in _paths(doc) if p and (not under or p[0] == under)]
    if not paths:
        return None
    path = rng.choice(paths)
    parent = _parent(doc, path)
    key = path[-1]
    if how == "drop":
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
    elif how == "wrong_type":
        parent[key] = rng.choice(wrong)
    elif how == "huge":
        parent[key] = rng.choice(HUGE)
    elif how == "repeat" and isinstance(parent[key], list):
        parent[key] = parent[key] * 50
    else:
        parent[key] = rng.choice(wrong)
    return doc


BAD_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28", b"\x00", b"\xef\xbb\xbf"]


@dataclass(frozen=True)
class Damage:
    kind: str
    seed: int

    def apply(self, data: bytes) -> bytes:
        rng = random.Random(self.seed)
        if self.kind == "none":
            return data
        if self.kind == "truncate":
            return data[: rng.randrange(0, max(1, len(data)))]
        if self.kind == "bad_utf8":
            at = rng.randrange(0, len(data) + 1)
            return data[:at] + rng.choice(BAD_UTF8) + data[at:]
        if self.kind == "bytes":
            out = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                if out:
                    out[rng.randrange(len(out))] = rng.randrange(256)
            return bytes(out)
        if self.kind == "empty":
            return b""
        try:
            return damage_json(data, rng, self.kind)
        except (ValueError, KeyError, IndexError, TypeError):  # not JSON: the TOML config
            pass
        try:
            return damage_toml(data, random.Random(self.seed), self.kind)
        except (ValueError, KeyError, IndexError, TypeError):  # neither: bytes
            return Damage("bytes", self.seed).apply(data)


JSON_DAMAGE = ["truncate", "bad_utf8", "bytes", "empty", "drop", "wrong_type", "huge", "repeat"]
BUBBLE_DAMAGE = ["drop@bubbles", "wrong_type@bubbles", "huge@bubbles", "repeat@bubbles"]


def damages(kinds=JSON_DAMAGE):
    return st.builds(Damage, st.sampled_from(kinds), st.integers(0, 2**32))


# -- the contract ------------------------------------------------------------------------------
def commands_for(kind: str, damaged: Path, seeds: dict[str, Path], out: Path) -> list[list[str]]:
    """The commands that read a file of this kind."""
    d, s, o = str(damaged), {k: str(v) for k, v in seeds.items()}, str(out)
    if kind in ("report", "report2", "report_bubbles"):
        return [
            ["report", d], ["report", d, "--format", "json"],
            ["gate", d, "--baseline", s["baseline"], "--steps", "3"],
            ["export", d, "--format", "markdown"], ["export", d, "--format", "sarif"], ["export", d, "--format", "github"],
            ["export", d, "--format", "perfetto"],
            ["combine", d, s["report2"], "-o", o],
            ["baseline", "create", d, "-o", o, "--force"],
        ]
    if kind == "baseline":
        return [["gate", s["report"], "--baseline", d, "--steps", "3"], ["gate", s["report"], "--baseline", d, "--steps", "3", "--update"]]
    if kind == "lint_json":
        return [["baseline", "create", d, "-o", o, "--force"], ["gate", d, "--baseline", s["lint_baseline"]]]
    if kind == "lint_baseline":
        return [["gate", s["lint_json"], "--baseline", d]]
    if kind == "config":
        return [["lint", "--no-cache", "--config", d, "--output-format", "json", s["source"]]]
    raise ValueError(kind)


class ContractBroken(AssertionError):
    pass


def check_command(runner, app, args: list[str], inputs: list[Path]) -> int:
    """Run one command in-process; raise ContractBroken unless it kept the contract."""
    before = {p: p.read_bytes() for p in inputs if p.exists()}
    result = runner.invoke(app, args)
    stderr = result.stderr or ""
    where = f"syncscope {' '.join(args)} -> exit {result.exit_code}\nstderr: {stderr[-2000:]}\nstdout: {result.stdout[-500:]}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        trace = "".join(traceback.format_exception(result.exception))
        raise ContractBroken(f"uncaught {type(result.exception).__name__}: {where}\n{trace}")
    if "Traceback" in stderr or "Traceback" in result.stdout:
        raise ContractBroken(f"a traceback was printed: {where}")
    if result.exit_code not in (0, 1, 2):
        raise ContractBroken(f"exit code {result.exit_code}: {where}")
    if result.exit_code == 2:
        lines = [line for line in stderr.splitlines() if line.strip()]
        if len(lines) != 1 or not lines[0].startswith("syncscope"):
            raise ContractBroken(f"exit 2 must come with one line starting with 'syncscope': {where}")
        for path, data in before.items():
            if path.read_bytes() != data:
                raise ContractBroken(f"{path} was changed by a failing command: {where}")
    elif "--format" in args and args[args.index("--format") + 1] in ("json", "sarif", "perfetto"):
        json.loads(result.stdout)  # machine output parses
    return result.exit_code


def runner_and_app():
    from typer.testing import CliRunner

    from syncscope.cli import app

    return CliRunner(), app


def damaged_copy(seeds: dict[str, Path], kind: str, damage: Damage, directory: Path) -> Path:
    target = directory / f"damaged-{kind}{seeds[kind].suffix}"
    target.write_bytes(damage.apply(seeds[kind].read_bytes()))
    return target


def outcome_counts(kind: str, damage: Damage, seeds, directory: Path, runner, app) -> list[int]:
    damaged = damaged_copy(seeds, kind, damage, directory)
    out = directory / "out.json"
    codes = []
    for args in commands_for(kind, damaged, seeds, out):
        if out.exists():
            os.unlink(out)
        inputs = [damaged] + [p for p in seeds.values() if str(p) in args]
        codes.append(check_command(runner, app, args, inputs))
    return codes
