"""The seed fixes of `syncscope lint --fix` (issue 27): each fix where the code holds a host twin
(VALID: the rewrite and whether it is safe), and no fix, with the reason, where the twin cannot
be trusted (INVALID: no twin in scope, a twin of another shape, a value written after its twin
was made, aliasing, a twin that is a different object). Formatting and comments are kept, and
`--fix` twice changes nothing the second time."""

from __future__ import annotations

import json
import os

import pytest

from syncscope.lint.fixes import fix_file

from lint_helpers import lint_source, make_config

HEAD = "import torch\n"


def _fix(tmp_path, source: str, code: str, **config):
    """(applicabilities, messages, source after --fix --unsafe-fixes) for `code`'s findings."""
    run = lint_source(tmp_path, HEAD + source, **config)
    found = [f for f in run.findings if f.code == code]
    assert found, f"{code} not flagged:\n{source}\ngot {[f.code for f in run.findings]}"
    wanted = {(f.code, f.site.line) for f in found if f.fix}
    fixed = None
    if wanted:
        result = fix_file(str(tmp_path / "example.py"), "example.py", wanted, make_config(tmp_path, **config), True)
        fixed = result[1][len(HEAD):] if result else None
    return [f.fix for f in found], [f.message for f in found], fixed


# (id, source, code, applicability, expected source after the fix)
VALID = [
    # t[mask] -> t[mask_cpu]
    ("mask-proven-copy", "def f(x: torch.Tensor, mask: torch.Tensor):\n    mask_cpu = mask.cpu()\n    return x[mask]\n",
     "SYN101", "safe", "def f(x: torch.Tensor, mask: torch.Tensor):\n    mask_cpu = mask.cpu()\n    return x[mask_cpu]\n"),
    ("mask-uploaded-from-twin",
     "def f(x: torch.Tensor, mask_cpu: torch.Tensor):\n    mask = mask_cpu.to(x.device, non_blocking=True)\n    return x[mask]\n",
     "SYN101", "safe",
     "def f(x: torch.Tensor, mask_cpu: torch.Tensor):\n    mask = mask_cpu.to(x.device, non_blocking=True)\n    return x[mask_cpu]\n"),
    ("mask-parameter-by-name", "def f(x: torch.Tensor, mask: torch.Tensor, mask_cpu):\n    return x[~mask]\n",
     "SYN101", "unsafe", "def f(x: torch.Tensor, mask: torch.Tensor, mask_cpu):\n    return x[~mask_cpu]\n"),
    ("mask-expression-of-field-twins",
     "def f(x: torch.Tensor, common):\n    n = common.lens_cpu.sum()\n    return x[common.lens > 1]\n",
     "SYN101", "unsafe", "def f(x: torch.Tensor, common):\n    n = common.lens_cpu.sum()\n    return x[common.lens_cpu > 1]\n"),
    ("mask-binding-only-indexes",  # the seed's naive/fixed branches: the alias binding takes the host mask
     "def f(self, x: torch.Tensor, common, naive):\n    m_cpu = common.d_cpu > 0\n    m = common.d > 0\n"
     "    if naive:\n        s, ns = m, ~m\n    else:\n        s, ns = self.upload(m_cpu)\n    return x[s], x[ns]\n",
     "SYN101", "unsafe",
     "def f(self, x: torch.Tensor, common, naive):\n    m_cpu = common.d_cpu > 0\n    m = common.d > 0\n"
     "    if naive:\n        s, ns = m_cpu, ~m_cpu\n    else:\n        s, ns = self.upload(m_cpu)\n    return x[s], x[ns]\n"),
    # repeat_interleave -> output_size from the host twin
    ("repeats-proven", "def f(x: torch.Tensor, reps: torch.Tensor):\n    reps_cpu = reps.cpu()\n"
     "    return torch.repeat_interleave(x, reps)\n", "SYN104", "safe",
     "def f(x: torch.Tensor, reps: torch.Tensor):\n    reps_cpu = reps.cpu()\n"
     "    return torch.repeat_interleave(x, reps, output_size=int(reps_cpu.sum()))\n"),
    ("repeats-recomputed-from-field-twins",
     "def f(x: torch.Tensor, common):\n    qsl_cpu = common.qsl_cpu\n    n = qsl_cpu.max()\n    lens = common.qsl[1:] - common.qsl[:-1]\n"
     "    return torch.repeat_interleave(x, lens)\n", "SYN104", "unsafe",
     "def f(x: torch.Tensor, common):\n    qsl_cpu = common.qsl_cpu\n    n = qsl_cpu.max()\n    lens = common.qsl[1:] - common.qsl[:-1]\n"
     "    return torch.repeat_interleave(x, lens, output_size=int((qsl_cpu[1:] - qsl_cpu[:-1]).sum()))\n"),
    ("repeats-copied-from-a-host-list",  # vLLM's flashinfer `_make_xqa_ragged_draft_block_mask`
     "def f(q_lens: list[int], device):\n    q_lens_t = torch.tensor(q_lens, device=device)\n"
     "    return torch.repeat_interleave(q_lens_t, q_lens_t)\n", "SYN104", "safe",
     "def f(q_lens: list[int], device):\n    q_lens_t = torch.tensor(q_lens, device=device)\n"
     "    return torch.repeat_interleave(q_lens_t, q_lens_t, output_size=sum(q_lens))\n"),
    # reads on the host twin
    ("item-proven", "def f(n_cpu: torch.Tensor):\n    n = n_cpu.cuda()\n    return n.item()\n", "SYN201", "safe",
     "def f(n_cpu: torch.Tensor):\n    n = n_cpu.cuda()\n    return n_cpu.item()\n"),
    ("tolist-attribute-of-self", "def step(self):\n    total = self.lens_cpu.sum()\n    return self.lens.tolist()\n",
     "SYN202", "unsafe", "def step(self):\n    total = self.lens_cpu.sum()\n    return self.lens_cpu.tolist()\n"),
    ("attribute-twin-copied-here", "def step(self):\n    self.off_cpu = self.off.cpu()\n    return self.off.tolist()\n",
     "SYN202", "safe", "def step(self):\n    self.off_cpu = self.off.cpu()\n    return self.off_cpu.tolist()\n"),
    ("int-of-reduction", "def f(x: torch.Tensor):\n    x_cpu = x.cpu()\n    return int(x.max())\n", "SYN205", "safe",
     "def f(x: torch.Tensor):\n    x_cpu = x.cpu()\n    return int(x_cpu.max())\n"),
    ("cpu-bound-and-read-only", "def f(x: torch.Tensor, x_cpu: torch.Tensor):\n    y = x.cpu()\n    return y.sum()\n",
     "SYN203", "unsafe", "def f(x: torch.Tensor, x_cpu: torch.Tensor):\n    y = x_cpu\n    return y.sum()\n"),
    ("numpy-on-numpy-twin", "def f(x_np):\n    x = torch.from_numpy(x_np).cuda()\n    return x.numpy(force=True)\n",
     "SYN204", "safe", "def f(x_np):\n    x = torch.from_numpy(x_np).cuda()\n    return x_np\n"),
    # a syncing property -> the host upper bound, safe where it is used as a bound
    ("bound-used-as-max", "def f(common_attn_metadata):\n    return int(common_attn_metadata.seq_lens_cpu.max())\n",
     "SYN301", "safe", "def f(common_attn_metadata):\n    return int(common_attn_metadata.seq_lens_cpu_upper_bound.max())\n"),
    ("bound-local-used-as-max",
     "def f(common_attn_metadata):\n    lens = common_attn_metadata.seq_lens_cpu\n    return max(lens), lens.max()\n",
     "SYN301", "safe",
     "def f(common_attn_metadata):\n    lens = common_attn_metadata.seq_lens_cpu_upper_bound\n    return max(lens), lens.max()\n"),
    ("bound-used-as-data", "def f(common_attn_metadata, q):\n    return common_attn_metadata.seq_lens_cpu - q\n",
     "SYN301", "unsafe", "def f(common_attn_metadata, q):\n    return common_attn_metadata.seq_lens_cpu_upper_bound - q\n"),
]


@pytest.mark.parametrize("source, code, applicability, expected", [pytest.param(*case[1:], id=case[0]) for case in VALID])
def test_fix_with_a_twin(tmp_path, source, code, applicability, expected):
    fixes, messages, fixed = _fix(tmp_path, source, code)
    assert fixes[0] == applicability, messages
    assert f"fix ({applicability}):" in messages[0]  # the finding says what the fix changes
    assert fixed == expected


# (id, source, code, what the finding says instead of a fix)
INVALID = [
    ("no-twin-in-scope", "def f(x: torch.Tensor, mask: torch.Tensor):\n    return x[mask]\n", "SYN101",
     "no host copy of `mask`"),
    ("twin-of-another-shape", "def f(x: torch.Tensor, mask: torch.Tensor):\n    mask_cpu = mask[:4].cpu()\n"
     "    return x[mask]\n", "SYN101", "another shape"),
    ("mask-written-after-twin", "def f(x: torch.Tensor, mask: torch.Tensor):\n    mask_cpu = mask.cpu()\n"
     "    mask[0] = True\n    return x[mask]\n", "SYN101", "`mask` is written after `mask_cpu` was made"),
    ("mask-written-in-place-after-twin", "def f(x: torch.Tensor, mask: torch.Tensor):\n    mask_cpu = mask.cpu()\n"
     "    mask.logical_not_()\n    return x[mask]\n", "SYN101", "written after"),
    ("twin-written-after", "def f(x: torch.Tensor, mask: torch.Tensor):\n    mask_cpu = mask.cpu()\n"
     "    mask_cpu[1:] = False\n    return x[mask]\n", "SYN101", "`mask_cpu` is written"),
    ("aliasing-write-through-alias", "def f(x: torch.Tensor, mask: torch.Tensor):\n    alias = mask\n"
     "    mask_cpu = mask.cpu()\n    alias.fill_(True)\n    return x[mask]\n", "SYN101", "through `alias`"),
    ("aliasing-write-through-view", "def f(x: torch.Tensor, mask: torch.Tensor):\n    mask_cpu = mask.cpu()\n"
     "    head = mask[:2]\n    head.zero_()\n    return x[mask]\n", "SYN101", "through `head`"),
    ("written-by-a-collective", "import torch.distributed as dist\n"
     "def f(t: torch.Tensor, t_cpu: torch.Tensor):\n    dist.all_reduce(t)\n    return t.item()\n",
     "SYN201", "`t` is written after `t_cpu` was made (`dist.all_reduce(t)`)"),
    ("passed-to-a-helper", "def f(x: torch.Tensor, mask: torch.Tensor):\n    mask_cpu = mask.cpu()\n"
     "    refine(mask)\n    return x[mask]\n", "SYN101", "`mask` is written after"),
    ("twin-is-the-device-value", "def f(x: torch.Tensor, mask: torch.Tensor):\n    mask_cpu = mask\n"
     "    return x[mask]\n", "SYN101", "is `mask` itself"),
    ("twin-is-a-different-object", "def f(x: torch.Tensor, mask: torch.Tensor, other):\n    mask_cpu = other.cpu()\n"
     "    return x[mask]\n", "SYN101", "a different object"),
    ("twin-rebound", "def f(x: torch.Tensor, mask: torch.Tensor, a, b):\n    mask_cpu = a.cpu()\n    mask_cpu = b.cpu()\n"
     "    return x[mask]\n", "SYN101", "bound more than once"),
    ("twin-made-after-use", "def f(x: torch.Tensor, mask: torch.Tensor):\n    y = x[mask]\n    mask_cpu = mask.cpu()\n"
     "    return y\n", "SYN101", "made after this line"),
    ("binding-used-other-than-index", "def f(x: torch.Tensor, m: torch.Tensor, m_cpu, naive):\n"
     "    if naive:\n        spec_mask = m > 0\n    else:\n        spec_mask = None\n"
     "    return x[spec_mask], spec_mask.sum()\n", "SYN101", "used other than as an index"),
    ("twin-tested-for-none", "def f(meta):\n    if meta.qsl_cpu is not None:\n        return meta.qsl_cpu.tolist()\n"
     "    return meta.qsl.tolist()\n", "SYN202", "is tested around this line"),
    ("twin-tested-in-ternary", "def f(x: torch.Tensor, mask: torch.Tensor, mask_cpu):\n"
     "    return x[mask_cpu] if mask_cpu is not None else x[mask]\n", "SYN101", "is tested around this line"),
    ("twin-maybe-a-list", "def f(meta, i):\n    n = meta.lens_cpu[i]\n    return int(meta.lens.sum().item())\n",
     "SYN201", "may be a list"),
    ("attribute-twin-made-by-this-copy", "def step(self):\n    self.off_cpu = self.off.cpu()\n    return self.off_cpu\n",
     "SYN203", "no host copy of `self.off`"),
    ("repeats-no-twin", "def f(x: torch.Tensor, reps: torch.Tensor):\n    return torch.repeat_interleave(x, reps)\n",
     "SYN104", "no host copy of `reps`"),
    ("repeats-written-after-twin", "def f(x: torch.Tensor, reps: torch.Tensor):\n    reps_cpu = reps.cpu()\n"
     "    reps += 1\n    return torch.repeat_interleave(x, reps)\n", "SYN104", "`reps` is written"),
    ("repeats-twin-of-another-shape", "def f(x: torch.Tensor, reps: torch.Tensor):\n    reps_cpu = reps[1:].cpu()\n"
     "    return torch.repeat_interleave(x, reps)\n", "SYN104", "another shape"),
    ("repeats-host-list-changed-after-copy", "def f(q_lens: list[int], device):\n"
     "    q_lens_t = torch.tensor(q_lens, device=device)\n    q_lens[0] = 0\n"
     "    return torch.repeat_interleave(q_lens_t, q_lens_t)\n", "SYN104", "no host copy of `q_lens_t`"),
    ("tolist-twin-different-object", "def f(lens: torch.Tensor, other: torch.Tensor):\n    lens_cpu = other.cpu()\n"
     "    return lens.tolist()\n", "SYN202", "a different object"),
    ("item-attribute-twin-written", "def step(self):\n    self.n_cpu.fill_(0)\n    return self.n.item()\n",
     "SYN201", "`self.n_cpu` is written"),
    ("cpu-result-written", "def f(x: torch.Tensor, x_cpu: torch.Tensor):\n    y = x.cpu()\n    y[0] = 1\n    return y\n",
     "SYN203", "would change the host copy"),
    ("cpu-of-numpy-twin", "def f(x: torch.Tensor, x_np):\n    return x.cpu()\n", "SYN203", "numpy array"),
]


@pytest.mark.parametrize("source, code, reason", [pytest.param(*case[1:], id=case[0]) for case in INVALID])
def test_no_fix_without_a_trustworthy_twin(tmp_path, source, code, reason):
    fixes, messages, fixed = _fix(tmp_path, source, code)
    assert fixes[0] is None and fixed is None, messages
    assert "no fix:" in messages[0] and reason in messages[0], messages[0]


def test_upper_bound_pairs_are_configurable(tmp_path):
    source = "def f(meta):\n    return int(meta.lens_cpu.max())\n"
    fixes, _, fixed = _fix(tmp_path, source, "SYN301", syncing_properties=["meta.lens_cpu"],
                           upper_bounds={"lens_cpu": ["lens_cpu_bound"]})
    assert fixes == ["safe"] and fixed == "def f(meta):\n    return int(meta.lens_cpu_bound.max())\n"
    fixes, messages, _ = _fix(tmp_path, source, "SYN301", syncing_properties=["meta.lens_cpu"], upper_bounds={})
    assert fixes == [None]


def test_formatting_and_comments_are_kept(tmp_path):
    source = (
        "def f(x: torch.Tensor, reps: torch.Tensor, mask: torch.Tensor):\n"
        "    reps_cpu = reps.cpu()  # host copy, made once\n"
        "    mask_cpu = mask.cpu()\n"
        "    y = torch.repeat_interleave(  # expand each row\n"
        "        x,\n"
        "        reps,  # per-row counts\n"
        "    )\n"
        "    z = x[  # the kept rows\n"
        "        mask  # a device mask\n"
        "    ]\n"
        "    return y, z\n"
    )
    run = lint_source(tmp_path, HEAD + source)
    wanted = {(f.code, f.site.line) for f in run.findings if f.fix}
    assert {code for code, _ in wanted} == {"SYN101", "SYN104"}  # the `.cpu()` copies make the twins: no fix
    new = fix_file(str(tmp_path / "example.py"), "example.py", wanted, make_config(tmp_path), True)[1]
    for comment in ("# host copy, made once", "# expand each row", "# per-row counts", "# the kept rows", "# a device mask"):
        assert comment in new
    assert "        reps,  # per-row counts\n" in new
    assert "        mask_cpu  # a device mask\n" in new
    assert "output_size=int(reps_cpu.sum())" in new
    compile(new, "example.py", "exec")
    # nothing else moved: the two edits are the whole difference
    assert new == (HEAD + source).replace("        mask  # a device mask", "        mask_cpu  # a device mask") \
        .replace("        reps,  # per-row counts\n", "        reps,  # per-row counts\n        output_size=int(reps_cpu.sum()),\n")


def test_fix_twice_changes_nothing_the_second_time(tmp_path):
    sources = [case[1] for case in VALID]
    body = "\n\n".join(s.replace("def f(", f"def f{i}(").replace("def step(", f"def step{i}(") for i, s in enumerate(sources))
    path = tmp_path / "example.py"
    path.write_text(HEAD + body)
    config = make_config(tmp_path)

    def fix_once() -> bool:
        from syncscope.lint.engine import lint_paths

        run = lint_paths([str(path)], config, use_cache=False, jobs=1)
        wanted = {(f.code, f.site.line) for f in run.findings if f.fix}
        result = fix_file(str(path), "example.py", wanted, config, True) if wanted else None
        if result is None:
            return False
        path.write_text(result[1])
        return True

    assert fix_once()
    once = path.read_text()
    compile(once, "example.py", "exec")
    assert not fix_once()
    assert path.read_text() == once


def test_sarif_carries_the_fix(tmp_path, capsys):
    import jsonschema

    from syncscope.commands.lint import run_lint

    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "example.py").write_text(HEAD + VALID[1][1] + "\n\n" + INVALID[0][1].replace("def f(", "def g("))
    code = run_lint([str(tmp_path / "example.py")], output_format="sarif", use_cache=False, jobs=1)
    assert code == 1
    log = json.loads(capsys.readouterr().out)
    with open(os.path.join(os.path.dirname(__file__), "sarif-schema-2.1.0.json"), encoding="utf-8") as handle:
        jsonschema.Draft4Validator(json.load(handle)).validate(log)
    results = log["runs"][0]["results"]
    with_fix = [r for r in results if "fixes" in r]
    assert len(with_fix) == 1 and len(results) == 2
    fix = with_fix[0]["fixes"][0]
    assert fix["properties"]["applicability"] == "safe"
    assert "mask_cpu" in fix["description"]["text"]
    replacement = fix["artifactChanges"][0]["replacements"][0]
    assert replacement["insertedContent"]["text"] == "_cpu"
    assert replacement["deletedRegion"]["startLine"] == 4  # `return x[mask]`, after the import and two lines
