"""The linter's recall on syncs the engines' own releases removed (tests/data/recall_corpus/).

The corpus is a list of source lines that a release of SGLang or vLLM removed or rewrote so that
the step no longer waits for the GPU, each with the release pair, the line in the parent, its
form and the evidence of where the tensor lives (read by hand in the parent's source). This
script rebuilds the mechanical part and measures the linter on it:

    # unpack the Python sources of the wheels (pip download --no-deps sglang==X -d WHEELS)
    python bench/recall_corpus.py unpack WHEELS TREES
    # the removed lines of one release pair that look like a sync (what the corpus was read from)
    python bench/recall_corpus.py candidates TREES/sglang-0.5.22/sglang TREES/sglang-0.5.23/sglang
    # every corpus line is still the parent's text, and the child release removed or rewrote it
    python bench/recall_corpus.py verify TREES
    # lint each parent tree whole, default options, as a user would; recall per form
    python bench/recall_corpus.py measure TREES [--syncscope 'python -m syncscope'] [--show-missed] [--cache-dir D]
    # the same recall, and for each miss whether it was found in code the default report calls cold
    python bench/recall_corpus.py measure TREES --show-missed --include-cold

TREES holds one folder per release, `sglang-0.5.22/sglang/...`, `vllm-0.32.0/vllm/...`. The
linter's cache is written inside each release folder (`.syncscope_cache`), so point TREES at a
copy you may write to.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import json
import os
import re
import shlex
import subprocess
import sys
import zipfile
from collections import Counter, defaultdict
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "recall_corpus" / "corpus.json"

# What a removed line must show to be read as a candidate (the corpus was sifted from these by
# hand: most candidates are refactors, host data or set-up code).
CANDIDATE_FORMS = {
    "item": r"\.item\(\)",
    "tolist": r"\.tolist\(\)",
    "cpu": r"\.cpu\(\)|\.to\(['\"]cpu|\.numpy\(\)",
    "host_to_device": r"torch\.(tensor|as_tensor)\(.*device|\.to\((self\.)?device|\.cuda\(\)",
    "store": r"\w\]\s*=\s*(-?[\d.]+(e\d+)?|True|False|float\(['\"]-?inf['\"]\)|[-\w.]+)\s*(#.*)?$",
    "split": r"\.split\(|torch\.split\(",
    "condition": r"^(if|elif|while|assert)\b.*\.(any|all)\(\)|^(if|elif|while)\b.*torch\.",
    "conversion": r"\b(int|float|bool)\((?!len\b)[\w.]+(\[.*\])?\.(max|min|sum)\(",
    "classic": r"nonzero\(|repeat_interleave\(|masked_select",
}
SKIP_PATHS = re.compile(r"test|benchmark|/cpu|npu|hpu|xpu|rocm|amd")


def python_files(root: Path) -> dict[str, Path]:
    return {str(p.relative_to(root)): p for p in root.rglob("*.py")}


def removed_lines(parent: list[str], child: list[str]):
    """Indexes (0-based) of the parent's lines that the child deleted or replaced."""
    matcher = difflib.SequenceMatcher(None, parent, child, autojunk=False)
    for tag, i1, i2, _j1, _j2 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            yield from range(i1, i2)


def cmd_unpack(args) -> int:
    out = Path(args.trees)
    for wheel in sorted(Path(args.wheels).glob("*.whl")):
        name, version = wheel.name.split("-")[:2]
        dest = out / f"{name}-{version}"
        if dest.exists():
            continue
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                if info.filename.startswith(name + "/") and info.filename.endswith(".py"):
                    archive.extract(info, dest)
        print(f"unpacked {wheel.name} -> {dest}")
    return 0


def cmd_candidates(args) -> int:
    patterns = {form: re.compile(p) for form, p in CANDIDATE_FORMS.items()}
    parent, child = python_files(Path(args.parent)), python_files(Path(args.child))
    child_lines = {line.strip() for path in child.values() for line in path.read_text(errors="replace").splitlines()}
    count = 0
    for rel in sorted(parent):
        if rel not in child or SKIP_PATHS.search(rel):
            continue
        old = parent[rel].read_text(errors="replace").splitlines()
        new = child[rel].read_text(errors="replace").splitlines()
        if old == new:
            continue
        for index in removed_lines(old, new):
            text = old[index].strip()
            # a line that still exists somewhere in the child moved; it was not removed
            if text.startswith("#") or text in child_lines:
                continue
            forms = [form for form, pattern in patterns.items() if pattern.search(text)]
            if forms:
                print(f"{rel}:{index + 1}: [{','.join(forms)}] {text[:140]}")
                count += 1
    print(f"{count} candidates", file=sys.stderr)
    return 0


def load_corpus() -> list[dict]:
    return json.loads(CORPUS.read_text())


def cmd_verify(args) -> int:
    trees, bad = Path(args.trees), 0
    for entry in load_corpus():
        parent = trees / f"{entry['engine']}-{entry['parent']}" / entry["file"]
        child = trees / f"{entry['engine']}-{entry['child']}" / entry["file"]
        old = parent.read_text().splitlines()
        where = f"{entry['engine']} {entry['parent']} {entry['file']}:{entry['line']}"
        if old[entry["line"] - 1].strip() != entry["text"]:
            print(f"MISMATCH {where}: {old[entry['line'] - 1].strip()!r} != {entry['text']!r}")
            bad += 1
            continue
        new = child.read_text().splitlines() if child.exists() else []
        if entry["line"] - 1 not in set(removed_lines(old, new)):
            print(f"NOT REMOVED {where} in {entry['child']}")
            bad += 1
    print(f"{len(load_corpus()) - bad} of {len(load_corpus())} entries verified")
    return 1 if bad else 0


def statement_span(source: str, line: int) -> tuple[int, int]:
    """First and last line of the innermost simple statement, or compound statement's header,
    holding `line`: a finding anywhere in it is a finding of that line."""
    best = (line, line)
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        compound = isinstance(body, list) and body and not isinstance(node, ast.ClassDef)
        end = body[0].lineno - 1 if compound else (node.end_lineno or node.lineno)
        if node.lineno <= line <= end and (best == (line, line) or node.lineno >= best[0]):
            best = (node.lineno, end)
    return best


def lint_tree(tree: Path, engine: str, syncscope: list[str], cache_dir: str | None,
              include_cold: bool = False) -> list[dict]:
    # --include-cold only adds the findings the default report leaves out, each marked
    # `"category": "cold"` with why: one run then gives both the default recall and the reason
    # each miss has (cold, or not found at all)
    extra = ["--include-cold"] if include_cold else []
    if cache_dir:  # one cache for all trees: consecutive releases share most files
        config = Path(cache_dir) / "cache-only.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f'[tool.syncscope.lint]\ncache-dir = "{Path(cache_dir).resolve()}"\n')
        extra += ["--config", str(config)]
    result = subprocess.run([*syncscope, "lint", engine, "--output-format", "json", "--exit-zero", "--no-progress", *extra],
                            cwd=tree, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"syncscope lint failed on {tree}: {result.stderr.strip()[-400:]}")
    return json.loads(result.stdout)


def cmd_measure(args) -> int:
    trees, syncscope = Path(args.trees), shlex.split(args.syncscope)
    corpus = [e for e in load_corpus() if args.engine in (None, e["engine"])]
    by_tree = defaultdict(list)
    for entry in corpus:
        by_tree[(entry["engine"], entry["parent"])].append(entry)
    found_by_form, total_by_form, rules = Counter(), Counter(), Counter()
    missed = []
    for (engine, parent), entries in sorted(by_tree.items()):
        tree = trees / f"{engine}-{parent}"
        findings = lint_tree(tree, engine, syncscope, args.cache_dir, args.include_cold)
        at, cold_at = defaultdict(set), defaultdict(set)
        for finding in findings:
            if finding.get("category") == "cold":  # not in the default report: a miss, with its reason
                cold_at[(finding["path"], finding["line"])].add(f"{finding['code']} [cold: {finding.get('cold')}]")
                if finding.get("root"):
                    path, _, line = finding["root"].rpartition(":")
                    cold_at[(path, int(line))].add(f"{finding['code']} via {finding['path']}:{finding['line']} "
                                                   f"[cold: {finding.get('cold')}]")
                continue
            at[(finding["path"], finding["line"])].add(finding["code"])
            if finding.get("root"):  # a chain's root is where the sync is written
                path, _, line = finding["root"].rpartition(":")
                at[(path, int(line))].add(finding["code"])
        for entry in entries:
            source = (tree / entry["file"]).read_text()
            first, last = statement_span(source, entry["line"])
            codes = set().union(*(at.get((entry["file"], n), set()) for n in range(first, last + 1)))
            total_by_form[entry["form"]] += 1
            if codes:
                found_by_form[entry["form"]] += 1
                rules.update(codes)
            else:
                cold = set().union(*(cold_at.get((entry["file"], n), set()) for n in range(first, last + 1)))
                missed.append((entry, cold))
        print(f"linted {engine} {parent}: {len(findings)} findings", file=sys.stderr)
    print("| form | found |\n| --- | --- |")
    for form in sorted(total_by_form):
        print(f"| {form} | {found_by_form[form]} / {total_by_form[form]} "
              f"({100 * found_by_form[form] / total_by_form[form]:.0f}%) |")
    all_found = sum(found_by_form.values())
    print(f"| all | {all_found} / {len(corpus)} ({100 * all_found / len(corpus):.0f}%) |")
    print("rules that found them: " + ", ".join(f"{code} {n}" for code, n in sorted(rules.items())))
    if args.show_missed:
        for entry, cold in missed:
            print(f"MISSED [{entry['form']}] {entry['engine']}-{entry['parent']}/{entry['file']}:{entry['line']}: {entry['text']}")
            if args.include_cold:
                print("    " + ("; ".join(sorted(cold)) if cold else "not found (no finding, cold or not)"))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    unpack = sub.add_parser("unpack")
    unpack.add_argument("wheels")
    unpack.add_argument("trees")
    cand = sub.add_parser("candidates")
    cand.add_argument("parent")
    cand.add_argument("child")
    verify = sub.add_parser("verify")
    verify.add_argument("trees")
    measure = sub.add_parser("measure")
    measure.add_argument("trees")
    measure.add_argument("--syncscope", default=f"{shlex.quote(sys.executable)} -m syncscope")
    measure.add_argument("--show-missed", action="store_true")
    measure.add_argument("--include-cold", action="store_true",
                         help="lint with --include-cold and say why each miss is missed (found but cold, "
                         "with the reason, or not found); the recall counts only per-step findings, "
                         "as the default report does")
    measure.add_argument("--engine", choices=("vllm", "sglang"), help="only this engine's trees")
    measure.add_argument("--cache-dir", help="one linter cache for every tree (results are the same; "
                         "consecutive releases then reuse each other's per-file results)")
    args = parser.parse_args(argv)
    return {"unpack": cmd_unpack, "candidates": cmd_candidates, "verify": cmd_verify,
            "measure": cmd_measure}[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main())
