"""Whole-program sync summaries (syncscope/lint/wholeprogram.py): a sync hidden behind a helper, a
property or a decorator is found where the hot path calls it. Each case is a small package
written for the test: helper in one module, property in another, caller in a third."""

from __future__ import annotations

import json
import textwrap

from syncscope.lint.engine import lint_paths
from syncscope.lint.output import write_json, write_text
from syncscope.render.sarif import to_sarif

from lint_helpers import make_config


def lint_package(tmp_path, files: dict[str, str], **overrides):
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.parent != root and not (path.parent / "__init__.py").exists():
            (path.parent / "__init__.py").write_text("")
        path.write_text(textwrap.dedent(source))
    return lint_paths([str(root)], make_config(tmp_path, **overrides), use_cache=False, jobs=1)


def chained(run, code=None):
    """(path, line, code) of each whole-program finding."""
    return sorted((f.site.path, f.site.line, f.code) for f in run.findings
                  if f.code in ("SYN601", "SYN602") and (code is None or f.code == code))


HELPERS = """
    import functools
    import torch

    def chunk_indices(cu_seqlens, chunk_size):
        lens = cu_seqlens[1:] - cu_seqlens[:-1]
        return [n // chunk_size for n in lens.tolist()]

    @functools.lru_cache(maxsize=None)
    def cached_total(mask: torch.Tensor):
        return torch.arange(8, device="cuda").sum().item()

    @functools.lru_cache(maxsize=None)
    def cached_table(n: int):
        return torch.arange(n, device="cuda").sum().item()

    def wait(event):
        event.synchronize()

    def slice_lens(cu_seqlens):
        return cu_seqlens[1:] - cu_seqlens[:-1]

    def gather(x):
        return x.cpu()

    def fetch(x):
        return x.cpu()
"""


def test_helper_called_with_host_data_in_one_place_and_device_data_in_another(tmp_path):
    run = lint_package(tmp_path, {
        "ops/helpers.py": HELPERS,
        "backend.py": """
            import torch
            from pkg.ops.helpers import chunk_indices as make_chunks

            def build(cu_seqlens: torch.Tensor, cu_seqlens_cpu: torch.Tensor):
                host = make_chunks(cu_seqlens_cpu, 64)
                dev = make_chunks(cu_seqlens, 64)
                return host, dev
        """,
    })
    assert chained(run) == [("pkg/backend.py", 7, "SYN601")]
    finding = next(f for f in run.findings if f.code == "SYN601")
    assert finding.chain[-1][:2] == ("pkg/ops/helpers.py", 7)
    assert "SYN202" in finding.message


def test_helper_only_ever_called_with_host_data_is_not_flagged(tmp_path):
    run = lint_package(tmp_path, {
        "ops/helpers.py": HELPERS,
        "backend.py": """
            import torch
            from pkg.ops import helpers

            def build(cu_seqlens_cpu: torch.Tensor):
                return helpers.chunk_indices(cu_seqlens_cpu, 64)
        """,
    })
    assert chained(run) == []
    # ... and the helper's own `.tolist()` on a value computed from that parameter is dropped
    assert [f for f in run.findings if f.site.function == "chunk_indices"] == []


def test_property_built_on_another_property_across_modules(tmp_path):
    run = lint_package(tmp_path, {
        "meta.py": """
            import torch
            from dataclasses import dataclass

            @dataclass
            class CommonMeta:
                seq_lens: torch.Tensor
                _seq_lens_cpu: torch.Tensor | None = None

                @property
                def seq_lens_cpu(self):
                    if self._seq_lens_cpu is None:
                        self._seq_lens_cpu = self.seq_lens.to("cpu")
                    return self._seq_lens_cpu

                @property
                def max_seq_len(self):
                    return int(self.seq_lens_cpu.max())
        """,
        "builder.py": """
            from pkg.meta import CommonMeta

            class Builder:
                def build(self, common: CommonMeta):
                    longest = common.max_seq_len
                    return longest
        """,
    })
    found = [f for f in run.findings if f.code == "SYN602" and f.site.path == "pkg/builder.py"]
    assert [(f.site.line, f.site.function) for f in found] == [(6, "Builder.build")]
    # the chain: build -> max_seq_len -> seq_lens_cpu, whose lazy copy is the root
    assert [step[2].rsplit(".", 1)[-1] for step in found[0].chain] == ["build", "max_seq_len", "seq_lens_cpu"]
    assert found[0].chain[-1][:2] == ("pkg/meta.py", 13)
    # the lazy-init copy itself is not a per-step finding where it is written
    assert not [f for f in run.findings if f.site.path == "pkg/meta.py" and f.site.line == 13]


def test_cached_property_and_decorated_cached_helper(tmp_path):
    run = lint_package(tmp_path, {
        "ops/helpers.py": HELPERS,
        "state.py": """
            import functools
            import torch
            from pkg.ops.helpers import cached_total

            class State:
                @functools.cached_property
                def total(self):
                    return self.counts.sum().item()

                @torch.no_grad()
                def advance(self, mask):
                    a = self.total
                    b = cached_total(mask)
                    c = cached_table(8)
                    return a + b + c
        """,
    })
    # a memo keyed by a tensor runs every step; one keyed by a configuration value runs once;
    # the cached property of an object whose lifetime is unknown syncs for its readers (`State`
    # has no per-step method: with `def step`, it would live across steps and the property run
    # once, test_lint_scope_args.py)
    assert chained(run) == [("pkg/state.py", 13, "SYN602"), ("pkg/state.py", 14, "SYN602")]


def test_method_reached_through_a_base_class_and_a_typed_field(tmp_path):
    run = lint_package(tmp_path, {
        "ops/helpers.py": HELPERS,
        "base.py": """
            from pkg.ops.helpers import wait

            class RunnerBase:
                def _sync_copy(self, event):
                    wait(event)
        """,
        "runner.py": """
            from dataclasses import dataclass
            from pkg.base import RunnerBase

            class Runner(RunnerBase):
                def step(self, event):
                    self._sync_copy(event)

            @dataclass
            class Engine:
                runner: Runner

                def loop(self, event):
                    self.runner.step(event)

                @classmethod
                def make(cls, event):
                    return cls.helper(event)

                @classmethod
                def helper(cls, event):
                    Runner._sync_copy(None, event)
        """,
    })
    assert chained(run) == [
        ("pkg/base.py", 6, "SYN602"),
        ("pkg/runner.py", 7, "SYN602"),
        ("pkg/runner.py", 14, "SYN602"),
        ("pkg/runner.py", 18, "SYN602"),
        ("pkg/runner.py", 22, "SYN602"),
    ]
    loop = next(f for f in run.findings if (f.site.path, f.site.line) == ("pkg/runner.py", 14))
    assert len(loop.chain) == 4  # loop -> step -> _sync_copy -> wait (the root)


def test_recursion_and_mutual_recursion_converge(tmp_path):
    run = lint_package(tmp_path, {
        "walk.py": """
            import torch

            def even(x, n):
                if n == 0:
                    return x.tolist()
                return odd(x, n - 1)

            def odd(x, n):
                return even(x, n - 1)

            def forever(x):
                return forever(x)

            def step(t: torch.Tensor):
                forever(t)
                return odd(t, 3)
        """,
    })
    assert chained(run) == [("pkg/walk.py", 17, "SYN601")]


def test_sync_three_calls_deep_with_return_summaries(tmp_path):
    run = lint_package(tmp_path, {
        "ops/helpers.py": HELPERS,
        "mid.py": """
            from pkg.ops import helpers

            def lens_of(cu):
                return helpers.slice_lens(cu)

            def plan(cu):
                lens = lens_of(cu)
                return level3(lens)

            def level3(lens):
                return helpers.chunk_indices(lens, 8)
        """,
        "top.py": """
            import torch
            from pkg.mid import plan, lens_of
            from pkg.ops.helpers import to_host, fetch

            def forward(cu_seqlens: torch.Tensor, cu_seqlens_cpu: torch.Tensor):
                a = plan(cu_seqlens)
                b = plan(cu_seqlens_cpu)
                c = lens_of(cu_seqlens).tolist()
                d = to_host(lens_of(cu_seqlens)).tolist()
                e = fetch(cu_seqlens).tolist()
                host_lens = lens_of(cu_seqlens_cpu)
                f = host_lens.tolist()
                return a, b, c, d, e, f
        """,
    })
    whole = chained(run, "SYN601")
    # fetch() itself copies its device argument to the host: that call is the sync
    assert whole == [("pkg/top.py", 7, "SYN601"), ("pkg/top.py", 11, "SYN601")]
    finding = next(f for f in run.findings if f.code == "SYN601" and f.site.line == 7)
    assert [s[2].rsplit(".", 1)[-1] for s in finding.chain] == ["forward", "plan", "level3", "chunk_indices"]
    # `lens_of(x)` keeps x's device; `to_host(...)` and `fetch(...)` return host data (the second
    # one is known only from its return summary, not its name): only the first `.tolist()` syncs
    direct = [(f.site.line, f.code) for f in run.findings if f.site.path == "pkg/top.py" and f.code == "SYN202"]
    assert direct == [(9, "SYN202")]


def test_nested_functions_and_classes_defined_inside_functions(tmp_path):
    run = lint_package(tmp_path, {
        "nested.py": """
            import torch

            def outer(x: torch.Tensor):
                def inner(y):
                    return y.item()

                class Local:
                    def go(self, z):
                        return inner(z)

                return Local().go(x) + inner(x)
        """,
    })
    assert ("pkg/nested.py", 12, "SYN601") in chained(run)


def test_suppressing_the_root_with_a_reason_accepts_the_chain_everywhere(tmp_path):
    files = {
        "ops/sync.py": """
            def wait(event):
                event.synchronize()  # syncscope: ignore[SYN503] the copy must be complete here
        """,
        "a.py": """
            from pkg.ops.sync import wait

            def step_a(event):
                wait(event)

            def step_b(event):
                wait(event)  # noqa: SYN602
        """,
    }
    run = lint_package(tmp_path, files)
    assert chained(run) == []


def test_call_site_suppression_marks_only_that_call(tmp_path):
    run = lint_package(tmp_path, {
        "ops/helpers.py": HELPERS,
        "a.py": """
            from pkg.ops.helpers import wait

            def step_a(event):
                wait(event)

            def step_b(event):
                wait(event)  # noqa: SYN602
        """,
    })
    assert chained(run) == [("pkg/a.py", 5, "SYN602")]


def test_cold_callers_are_not_reported_and_one_root_groups_its_call_sites(tmp_path):
    callers = "\n".join(f"def step_{i}(event):\n    wait(event)\n" for i in range(40))
    run = lint_package(tmp_path, {
        "ops/helpers.py": HELPERS,
        "many.py": "from pkg.ops.helpers import wait\n\ndef load_weights(event):\n    wait(event)\n\n" + callers,
    })
    found = [f for f in run.findings if f.code == "SYN602"]
    assert len(found) == 40 and all(f.site.function.startswith("step_") for f in found)
    import io

    out = io.StringIO()
    write_text(run.findings, run.texts, out)
    text = out.getvalue()
    # the root is spelled out once; the other 39 call sites point at it and are grouped
    assert text.count("pkg/ops/helpers.py:18 SYN503") == 1  # the whole chain, once
    assert text.count("reaches the sync at pkg/ops/helpers.py:18") == 39
    assert "pkg/ops/helpers.py:18 (SYN503" in text and ": 40 call sites" in text


def test_chain_in_json_and_sarif(tmp_path):
    import io

    run = lint_package(tmp_path, {
        "ops/helpers.py": HELPERS,
        "a.py": "from pkg.ops.helpers import wait\n\ndef step(event):\n    wait(event)\n",
    })
    out = io.StringIO()
    write_json(run.findings, out)
    record = next(r for r in json.loads(out.getvalue()) if r["code"] == "SYN602")
    assert [(s["path"], s["line"]) for s in record["chain"]] == [("pkg/a.py", 4), ("pkg/ops/helpers.py", 18)]
    assert record["root"] == "pkg/ops/helpers.py:18"
    sarif = to_sarif([f for f in run.findings if f.code == "SYN602"])
    result = sarif["runs"][0]["results"][0]
    assert result["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 18
    flow = result["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [step["location"]["physicalLocation"]["artifactLocation"]["uri"] for step in flow] == \
        ["pkg/a.py", "pkg/ops/helpers.py"]


def test_cycles_in_imports_and_calls_do_not_crash(tmp_path):
    run = lint_package(tmp_path, {
        "a.py": "import torch\nfrom pkg.b import g\nfrom pkg.b import *\ndef f(x):\n    return g(x)\n",
        "b.py": "import torch\nfrom pkg.a import f\ndef g(x):\n    return f(x).item()\n",
        "__init__.py": "from pkg.a import f as g\nfrom pkg.b import g as f\n",
    })
    assert not run.internal_errors


def test_tuple_returns_and_host_copies_of_objects(tmp_path):
    run = lint_package(tmp_path, {
        "dp.py": """
            import torch

            def _pad(tensor, pad):
                if pad:
                    return torch.tensor([int(tensor.max())] * 2, device="cpu")
                return tensor.cpu()

            def coordinate(tensor, pad):
                if pad is None:
                    return False, None
                return True, _pad(tensor, pad)
        """,
        "out.py": """
            import torch

            class Output:
                def to_cpu_nonblocking(self):
                    return Output()

                def tolists(self):
                    return self.counts.cpu().tolist()
        """,
        "runner.py": """
            import torch
            from pkg.dp import coordinate
            from pkg.out import Output

            def step(tensor: torch.Tensor, rank: int, out: Output):
                should_pad, across = coordinate(tensor, True)
                n = int(across[rank].item())
                host_out = out.to_cpu_nonblocking()
                a = host_out.tolists()
                b = out.tolists()
                return n, a, b
        """,
    })
    runner = [(f.site.line, f.code) for f in run.findings if f.site.path == "pkg/runner.py"]
    # `across` is element 1 of a tuple whose element 1 is always a host tensor: no sync at 8;
    # coordinate() itself syncs (`int(tensor.max())` inside _pad), reported at the call (7);
    # `tolists()` on a host copy of the object is none; on the device object it is (11)
    assert runner == [(7, "SYN601"), (11, "SYN602")]


def test_an_attribute_a_class_fills_from_host_data_is_a_host_receiver(tmp_path):
    run = lint_package(tmp_path, {
        "out.py": """
            class SamplerOutput:
                def tolists(self):
                    return self.counts.cpu().tolist()
        """,
        "async_out.py": """
            from pkg.out import SamplerOutput

            class AsyncOutput:
                def __init__(self, output: SamplerOutput):
                    self.mask_tensors: SamplerOutput | None = None
                    self.mask_tensors = output.to_cpu_nonblocking()
                    self.device_out: SamplerOutput = output

                def get_output(self):
                    a = self.mask_tensors.tolists()
                    b = self.device_out.tolists()
                    return a, b
        """,
    })
    # `mask_tensors` is filled from a host copy (`to_cpu_nonblocking()`): its fields are on
    # the host and `tolists()` copies nothing; `device_out` is the device object
    assert chained(run) == [("pkg/async_out.py", 12, "SYN602")]


def test_cached_runs_give_the_whole_program_findings_of_a_fresh_one(tmp_path):
    """The cache keeps the per-function facts apart from the small per-file results and the
    pass's output keyed by every file's content: a rerun, an edit of the helper module, and a
    cache that lost its facts file all give what an uncached run gives."""
    import os
    import time

    root = tmp_path / "pkg"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "helpers.py").write_text("def gather(x):\n    return x.cpu()\n")
    (root / "calc.py").write_text("def numbers(x):\n    return x.tolist()\n")  # facts only: no torch word
    (root / "step.py").write_text(textwrap.dedent("""
        import torch
        from .helpers import gather
        from .calc import numbers

        def step(t: torch.Tensor):
            a = gather(t)
            return numbers(t)
    """))
    config = make_config(tmp_path)

    def findings(**kw):
        return chained(lint_paths([str(root)], config, jobs=1, **kw))

    fresh = findings(use_cache=False)
    assert [line for _, line, _ in fresh] == [7, 8]
    assert findings() == fresh  # cold, writes the cache
    assert findings() == fresh  # warm: the pass's output comes from the cache
    cache_dir = tmp_path / ".syncscope_cache"
    kinds = {name.split("-")[4].split(".")[0] for name in os.listdir(cache_dir) if name.endswith(".pickle")}
    assert kinds == {"facts", "files", "solved", "scans"}, kinds  # lint-v<format>-<code>-<config>-<kind>...

    time.sleep(0.01)
    (root / "helpers.py").write_text("def gather(x):\n    return x\n")  # no longer syncs
    edited = findings()
    assert edited == findings(use_cache=False) == [fresh[1]]

    for name in os.listdir(cache_dir):
        if "-facts-" in name or "-solved-" in name:
            os.unlink(cache_dir / name)
    (root / "helpers.py").write_text("def gather(x):\n    y = x\n    return y.cpu()\n")
    assert findings() == findings(use_cache=False) == fresh
