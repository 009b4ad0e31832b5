"""The lint run: find files, reuse cached results, analyze the rest in parallel, add the
cross-file findings, then apply selection and suppressions and turn findings into `Site`s.

Stays cheap when nothing changed: hashing the files and loading one cache pickle, no libcst
import, no process pool.
"""

from __future__ import annotations

import gc
import importlib
import os
from dataclasses import dataclass, field, replace

from ..site import Site, with_occurrences
from .cache import FACT_FIELDS, Cache, content_hash, tree_key
from .collector import fewer_full_collections, paused_then_frozen
from .config import LintConfig
from .files import discover, module_name, trigger_pattern
from .field_configs import FIELDS_METHOD, configs_ahead
from .analysis_runs import analyze_all, analyzed
from .head_start import HeadStart
from .interning import Interner
from .lineshift import line_map, shift_solution
from .optin import switch_words
from .field_tables import FieldTables, condition_holds
from .python_args import PythonArgs
from .records import FileFinding, diagnostic
from .source_texts import text_of_bytes
from .text_scans import TextScans
from .suppress import apply_suppressions, may_have_suppressions, parse_suppressions, unused_suppressions
from .wholeprogram import solve
from .worker import RawResult, analyze_bytes, analyze_file, decode


FIELDS_METHOD_BYTES = FIELDS_METHOD.encode()
# at most this many edited files are compared with what the cache held for them (lineshift.py):
# an edit of a few staged files, not a checkout of another branch
MAX_MOVED = 16


@dataclass(frozen=True)
class Finding:
    """One lint result: a site plus what the report needs. Duck-types the record that
    `syncscope.render.sarif` / `github` take (rule_id, message, level, site, fingerprint)."""

    site: Site
    code: str
    message: str
    level: str
    column: int
    fix: str | None  # "safe", "unsafe" or None
    fingerprint: str
    # SYN601/SYN602: the calls from this site down to the line that syncs, each step
    # (path, line, function, note); the last one is the root
    chain: tuple = ()
    # why it runs every step: the path from a per-step root, ((function, path, line), ...),
    # root first (reachability.py); empty when the whole-program pass did not run
    per_step: tuple = ()
    cold: str | None = None  # why it does not run every step (reported with --include-cold only)
    accepted: str | None = None  # why the code accepts it: in a block that accepts its syncs

    @property
    def rule_id(self) -> str:
        return self.code

    @property
    def path(self) -> str:
        return self.site.path

    @property
    def line(self) -> int:
        return self.site.line


@dataclass
class LintRun:
    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    parsed: int = 0
    cached: int = 0
    skipped: int = 0  # could not contain a finding: not parsed
    internal_errors: list[str] = field(default_factory=list)
    cold: int = 0  # findings in code that does not run every step (left out unless include_cold)
    texts: dict[str, list[str]] = field(default_factory=dict)  # rel path -> lines, for code frames
    abs_paths: dict[str, str] = field(default_factory=dict)


def lint_paths(paths: list[str], config: LintConfig, *, jobs: int | None = None, use_cache: bool = True,
               progress=None) -> LintRun:
    # A few named files with a cache (the pre-commit hook): their analysis starts now, beside
    # the finding of the project's files and the cache's loading (head_start.py).
    head = HeadStart.begin(paths, config, jobs) if use_cache and config.cross_file else None
    if head is not None:
        _import_ahead()
    try:
        files, report_only = _with_project(paths, config)
        cache = Cache(config.root, config.cache_dir, config.analysis_key()) if use_cache else None
        # What is loaded so far (the cache: ~3 million objects on whole vLLM) lives through the
        # run; the cyclic collector's full collections scanned it again and again while an
        # edited file was analyzed in this process and the cross-file tables were built (~0.2 s
        # of a 1-2 s warm run). Frozen, they skip it; what the run makes after this is
        # collected as before.
        gc.freeze()
        try:
            return _lint(files, report_only, cache, config, jobs, progress, head)
        finally:
            gc.unfreeze()
    finally:
        if head is not None:
            head.close()


def _import_ahead() -> None:
    """What the run imports once the analysis is in (the per-step scope, the walk of files
    that inherit fields: ~0.03 s of modules), imported while the head start's child analyzes
    the named files and this process would otherwise wait for it."""
    for name in ("reachability", "carrier_fields", "copy_methods"):
        importlib.import_module(f"{__package__}.{name}")


def _lint(files: list, report_only: set | None, cache: Cache | None, config: LintConfig, jobs, progress,
          head: HeadStart | None = None) -> LintRun:
    run = LintRun(files=len(files) if report_only is None else len(report_only))
    triggers = trigger_pattern(config)
    results: dict[str, RawResult] = {}
    digests: dict[str, str] = {}  # the whole-program pass's input, for its cache
    todo: list[tuple] = []  # (absolute, rel, module, is_package, digest, stamp, facts only, inherited fields)
    ahead: dict[str, object] = {}  # module -> its field configs, read before the analysis
    for absolute, rel in files:
        run.abs_paths[rel] = absolute
        try:
            stat = os.stat(absolute)
            stamp = (stat.st_mtime_ns, stat.st_size)
            cached = cache.get_unchanged(rel, stamp) if cache else None
            if cached is not None:
                results[rel] = cached
                digests[rel] = cache.digest_of(rel)
                run.cached += 1
                continue
            with open(absolute, "rb") as handle:
                data = handle.read()
        except OSError as error:
            results[rel] = RawResult(findings=[diagnostic("SYN001", f"cannot read file: {error.strerror}")])
            digests[rel] = f"unreadable {error.errno}"
            continue
        # the bytes are not kept: the workers read the file themselves, and the few files with
        # findings are read again for their code frames (keeping every file's text held ~45 MB
        # on whole vLLM through the run, and in the forked workers' copy of the parent)
        digest = content_hash(data)
        digests[rel] = digest
        cached = cache.get(rel, digest) if cache else None
        if cached is not None:
            results[rel] = cached
            cache.put(rel, digest, cached, stamp)  # touched but unchanged: remember the new stamp
            run.cached += 1
        elif config.host_only(rel):
            results[rel] = RawResult(switch_words=switch_words(text_of_bytes(data)))
            if may_have_suppressions(data):  # for the unused-suppression warning
                results[rel].suppressions = parse_suppressions(_text(data))
            if cache is not None:
                cache.put(rel, digest, results[rel], stamp)
            run.skipped += 1
        else:
            module, is_package = module_name(absolute)
            # no torch code: no rule can fire, but calls may pass through it (facts only)
            facts_only = not triggers.search(data)
            run.skipped += facts_only
            todo.append((absolute, rel, module, is_package, digest, stamp, facts_only, frozenset()))
            # a forecast (field_configs.py): the files that declare field configs or name a
            # multimodal processor, not every file that mentions a processor (432 of vLLM's, 362
            # of SGLang's); an inheritor it misses is walked again after the analysis
            if b"MultiModalProcessor" in data or b"FieldConfig" in data or FIELDS_METHOD_BYTES in data:
                ahead[module] = configs_ahead(_text(data), module, is_package)
    run.parsed = len(todo) - sum(1 for t in todo if t[6])
    todo = _inheriting_ahead(todo, ahead, results, digests)
    # The unions over every result (field_tables.py). With a head start, those of the results
    # in hand are made now, while its child analyzes the named files; otherwise after the
    # whole-program pass, so that the pass does not run beside them (~20 MB on whole vLLM).
    early = FieldTables.of(results) if head is not None else None

    # one object per equal name across the workers' results (interning.py): on whole vLLM the
    # parent holds them beside the workers, the run's peak
    interner = Interner()
    # what the cache held for each edited file, before it is replaced: when an edit only moved
    # lines, the whole-program pass's output for the tree before is moved instead of rerun
    previous: dict[str, tuple] | None = {} if cache is not None and config.cross_file and len(todo) <= MAX_MOVED \
        else None
    if previous is not None:
        for task in todo:
            old = cache.previous(task[1])
            previous[task[1]] = (cache.digest_of(task[1]), old) if old is not None else None
        if head is not None:  # read now, while the child analyzes: what the pass will look up
            _solution_ahead(cache, digests, previous)
    for task, result in analyzed(todo, config, jobs, progress, head):
        _, rel, _, _, digest, stamp, _, _ = task
        result = results[rel] = interner.result(result)
        if early is not None:
            early.add(result)
        if cache is not None:
            cache.put(rel, digest, result, stamp)
        if result.internal_error:
            run.internal_errors.append(f"{rel}: {result.internal_error}")
    del interner  # its tables (~190,000 names on whole vLLM) are not needed past the analysis
    replaced = _walk_inheritors_again(results, digests, cache, config, jobs, run)
    extra, host_params, host_origins, per_step = _whole_program(results, digests, cache, config, run.abs_paths,
                                                                previous) \
        if config.cross_file else ({}, set(), set(), None)
    scope = Scope(config, per_step)
    if cache is not None:
        cache.save()
    if report_only is None:  # a whole-tree run's peak is still to come; a run on named files has none (~0.03 s)
        _drop_pass_facts(results)
    # a result the second walk replaced is in the early tables: a union cannot take it out
    tables = early if early is not None and not replaced else FieldTables.of(results)
    host_fields = tables.host_fields(results)
    device_attrs, vector_attrs = tables.device_attributes()
    owners = tables.owner_fields()
    python_args = PythonArgs(results, per_step["functions"] if per_step else None)
    by_default = per_step.get("host_by_default") or {} if per_step else {}  # offpaths.py
    sites: list[tuple[Site, FileFinding]] = []
    for rel in sorted(results):
        if report_only is not None and rel not in report_only:
            continue  # analyzed for its facts only: a file of the project that was not named
        raw = results[rel]
        pending = [f for f in raw.findings
                   if not (f.field and "%s.%s" % f.field in host_fields)
                   and f.param not in host_params and (rel, f) not in host_origins
                   and condition_holds(f.device_condition, device_attrs, vector_attrs, owners)
                   and (f.python_arg is None or python_args.fed(f.python_arg))]
        if by_default:  # host data wherever the default configuration runs it: cold, with why
            pending = [f._replace(cold=by_default[f.param]) if f.param in by_default else f for f in pending]
            pending = [f._replace(cold=by_default[key]) if (key := ("refill", rel, f.code, f.line)) in by_default
                       else f for f in pending]
        pending += extra.get(rel, ())
        suppressions = raw.suppressions
        if not pending and not suppressions:
            continue
        pending = [p for p in pending if _is_diagnostic(p.code) or config.enabled(p.code, rel)]
        kept, used = apply_suppressions(pending, suppressions)
        kept = scope.judge(rel, raw, kept, run)
        if suppressions and config.enabled("SYN900", rel):
            for line, message in unused_suppressions(suppressions, used, lambda c: config.enabled(c, rel)):
                # Not fixable: `--fix` has no edit for a stale comment, so it must not claim one (issue 28).
                kept.append(diagnostic("SYN900", message, line, level="warning"))
        if not kept:
            continue
        try:  # read again for the code frame (see above)
            with open(run.abs_paths[rel], "rb") as handle:
                data = handle.read()
        except OSError:
            data = b""
        lines = _text(data).splitlines()
        run.texts[rel] = lines
        for p in kept:
            source = lines[p.line - 1].strip() if 0 < p.line <= len(lines) else ""
            sites.append((Site(rel, p.line, p.function, p.code, source), p))
    numbered = with_occurrences(site for site, _ in sites)
    by_key = {(s.path, s.line, s.kind, s.function): s for s in numbered}
    seen: set[tuple] = set()
    for site, p in sorted(sites, key=lambda item: (item[0].path, item[0].line, item[1].column, item[0].kind)):
        key = (site.path, site.line, p.column, site.kind, p.message)
        if key in seen:
            continue
        seen.add(key)
        numbered_site = by_key.get((site.path, site.line, site.kind, site.function), site)
        run.findings.append(Finding(numbered_site, p.code, p.message, p.level, p.column, p.fix,
                                    numbered_site.fingerprint(), p.chain, p.per_step, p.cold, p.accepted))
    return run


def _inheriting_ahead(todo: list, ahead: dict, results: dict, digests: dict) -> list:
    """The tasks, those of files that inherit host-only fields (field_configs.py) given them
    and the digest `_walk_inheritors_again` would give them: such a file is then walked once.
    Files without torch code are left to that second walk (a first walk reads their facts only)."""
    from .field_configs import inherited_fields

    configs = {r.module: r.field_configs for r in results.values() if r.module and r.field_configs is not None}
    configs.update((module, found) for module, found in ahead.items() if found is not None)
    inherited = inherited_fields(configs) if configs else {}
    tasks = []
    for task in todo:
        fields = inherited.get(task[2])
        if fields and not task[6]:
            digest = task[4] + "+" + ",".join(sorted(fields))
            digests[task[1]] = digest
            task = task[:4] + (digest,) + task[5:7] + (fields,)
        tasks.append(task)
    return tasks


def _walk_inheritors_again(results: dict, digests: dict, cache: Cache | None, config: LintConfig, jobs, run) -> bool:
    """Walk again the files that use another module's multimodal processor, with the fields
    that processor keeps on the CPU as host-only keys (field_configs.py): the per-file walk
    cannot see a declaration in another file. Only files whose inherited fields differ from
    those their result was made with are walked (none on vLLM once `_inheriting_ahead` gave the
    61 inheriting models theirs; the carrier attributes, and any forecast it got wrong, are
    found here; none on a warm cache);
    the digest the result is cached under names the fields, so the whole-program pass's cache
    key changes with them. True when it replaced any result."""
    from .field_configs import inherited_fields

    configs = {r.module: r.field_configs for r in results.values() if r.module and r.field_configs is not None}
    inherited = inherited_fields(configs) if configs else {}
    _add_carrier_attrs(results, inherited)
    todo = []
    for rel, result in results.items():
        wanted = inherited.get(result.module, frozenset())
        if wanted == result.inherited_fields or result.module is None:
            continue
        absolute = run.abs_paths[rel]
        wanted = _read_attrs(absolute, wanted)  # a carrier attribute the file never names changes nothing
        if wanted == result.inherited_fields:
            continue
        module, is_package = module_name(absolute)
        try:
            stat = os.stat(absolute)
        except OSError:
            continue
        todo.append((absolute, rel, module, is_package, None, (stat.st_mtime_ns, stat.st_size), False, wanted))
    for task, result in analyze_all(todo, config, jobs, None):
        rel = task[1]
        base = digests[rel].split("+", 1)[0]
        digest = base + ("+" + ",".join(sorted(task[7])) if task[7] else "")
        results[rel], digests[rel] = result, digest
        if cache is not None:
            cache.put(rel, digest, result, task[5])
    return bool(todo)


def _add_carrier_attrs(results: dict, inherited: dict) -> None:
    """The host attributes of carrier objects (carrier_fields.py), as ".name", for the modules
    that import or use a carrier class."""
    from .carrier_fields import carrier_host_attrs, imported_classes
    from .copy_methods import copied_host_attrs

    facts = {r.module: r.carrier_facts for r in results.values()
             if r.module and getattr(r, "carrier_facts", None) is not None}
    if not facts:
        return
    imported = {r.module: imported_classes(r) for r in results.values() if r.module}
    for module, attrs in carrier_host_attrs(facts, imported).items():
        inherited[module] = inherited.get(module, frozenset()) | attrs
    for module, attrs in copied_host_attrs(facts).items():  # fields a copy method has copied (copy_methods.py)
        inherited[module] = inherited.get(module, frozenset()) | attrs


def _read_attrs(path: str, wanted: frozenset) -> frozenset:
    """`wanted` less the carrier attributes (".name") and mappings ("[name") whose name the
    file's text never holds (a mapping alone, with no attribute left, changes nothing)."""
    from .carrier_fields import MAPPING

    attrs = [n for n in wanted if n.startswith((".", MAPPING))]
    if not attrs:
        return wanted
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return wanted
    kept = frozenset(n for n in wanted if not n.startswith((".", MAPPING)) or n[1:] in text)
    return kept if any(n.startswith(".") for n in kept) else frozenset(n for n in kept if not n.startswith(MAPPING))


def _with_project(paths: list[str], config: LintConfig) -> tuple[list[tuple[str, str]], set[str] | None]:
    """Files to analyze, and the ones to report on when that is fewer. Files named on their own
    (a pre-commit hook passes the staged ones) are linted with their whole project, so a call
    into a helper of another module is found just as a whole-tree run finds it; the other files'
    facts come from the cache after the first run. The project is the configuration root when
    it has a pyproject.toml, else the outermost package holding the first file."""
    given = discover(paths, config)
    if not config.cross_file or not paths or not all(os.path.isfile(p) for p in paths):
        return given, None
    project = _project_of(paths[0], config)
    if project is None:
        return given, None
    whole = dict(discover([project], config))
    whole.update(given)  # a file named explicitly is linted even where the project excludes it
    return sorted(whole.items(), key=lambda item: item[1]), {rel for _, rel in given}


def _project_of(path: str, config: LintConfig) -> str | None:
    root = os.path.abspath(config.root)
    if os.path.isfile(os.path.join(root, "pyproject.toml")):
        return root
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isfile(os.path.join(directory, "__init__.py")):
        return None
    while os.path.isfile(os.path.join(os.path.dirname(directory), "__init__.py")):
        directory = os.path.dirname(directory)
    return directory


def _whole_program(results: dict, digests: dict, cache: Cache | None, config: LintConfig, abs_paths: dict,
                   previous: dict | None = None):
    """The whole-program pass's findings, from the cache when no file changed since it last ran
    on this set of files (then the per-function facts are not even loaded)."""
    # The results (~3 million objects on whole vLLM) live through the run: frozen here, if the
    # arrivals have not frozen them already, so that no collection scans them (lint_paths
    # unfreezes them at the end). The collector stays on for the pass's own cycles, its full
    # collections made rarer (collector.py).
    gc.freeze()
    with fewer_full_collections():
        return _solve_or_reuse(results, digests, cache, config, abs_paths, previous)


def _solve_or_reuse(results: dict, digests: dict, cache: Cache | None, config: LintConfig, abs_paths: dict,
                    previous: dict | None = None):
    key = tree_key(digests) if cache is not None else None
    if cache is not None:
        solved = cache.get_solved(key)
        if solved is None and previous:
            solved = _moved_solution(results, digests, cache, previous)
            if solved is not None:
                cache.put_solved(key, solved)
        if solved is not None:
            return solved
        _load_facts(results, cache, config, abs_paths)
        cache.flush_facts()
    contents = {rel: digest.split("+", 1)[0] for rel, digest in digests.items()}  # less the inherited fields
    texts = TextScans(abs_paths, contents, cache.get_scans() if cache is not None else None)
    solved = solve(dict(sorted(results.items())), config.library(), config.cold_function, texts)  # file order, not the workers' arrival order: the same roots every run
    if cache is not None:
        cache.put_solved(key, solved)
        cache.put_scans(texts.kept)
    return solved


def _load_facts(results: dict, cache: Cache, config: LintConfig, abs_paths: dict) -> None:
    """Every cached result with its whole-program facts, for the pass. The facts are millions of
    objects (none in a cycle) that live through the pass: the cyclic collector's collections
    while they arrive scanned them again and again (2.8 of 18 s of an edit's rerun on whole
    vLLM), so it is paused, and what was loaded is then frozen, as the results were before."""
    analyzed = False
    with paused_then_frozen():
        try:
            for rel, result in list(results.items()):
                if not result.has_facts:
                    full = cache.with_facts(rel, result)
                    if full is None:  # facts lost from the cache: read them from the file again
                        absolute = abs_paths[rel]
                        module, is_package = module_name(absolute)
                        facts = analyze_file(absolute, module, is_package, config, False)  # roots need the rules
                        # only the facts: the cached findings stay exactly what they were
                        full = replace(result, **{name: getattr(facts, name) for name in FACT_FIELDS}, has_facts=True)
                        analyzed = True
                    # not interned: the walk costs ~5 s on whole vLLM, more than an edited file's
                    # whole run, and no workers run beside this pass (the run's peak is theirs)
                    results[rel] = full
        finally:
            if analyzed:
                gc.collect()  # an analysis's cycles: freed, not frozen


def _solution_ahead(cache: Cache, digests: dict, previous: dict) -> None:
    """Load the pass's output that `_solve_or_reuse` will look for: this tree's, else the tree's
    before the edit (`_moved_solution`). The cache keeps what it loaded."""
    if cache.get_solved(tree_key(digests)) is None and (before := _digests_before(digests, previous)) is not None:
        cache.get_solved(tree_key(before))


def _digests_before(digests: dict, previous: dict) -> dict | None:
    """The tree's content hashes before the edit: each edited file's as the cache held it (None
    when one was not in the cache, or is no longer in the tree)."""
    if any(entry is None or digests.get(rel) is None for rel, entry in previous.items()):
        return None
    return {**digests, **{rel: entry[0] for rel, entry in previous.items()}}


def _moved_solution(results: dict, digests: dict, cache: Cache, previous: dict):
    """The pass's output for this tree from its output for the tree before the edit, when
    every edited file's analysis is what it was up to where its lines are (lineshift.py)."""
    before = _digests_before(digests, previous)
    if before is None:
        return None
    maps = {}
    for rel, (_, old) in previous.items():
        mapping = line_map(old, results[rel])
        if mapping is None:
            return None
        if any(line != moved for line, moved in mapping.items()):
            maps[rel] = mapping
    solved = cache.get_solved(tree_key(before))
    if solved is None:
        return None
    return shift_solution(solved, maps) if maps else solved


# What only the whole-program pass reads of a file's result: not held past it (the run's peak
# memory comes after the pass, while the findings are judged and their code frames read).
_PASS_ONLY = ("name_uses", "flag_passes", "const_guards", "const_literals", "const_passes", "none_config",
              "element_calls",
              "straight", "loops", "memos", "dispatch", "guards", "name_guards", "flag_guards", "error_paths", "cuda_tests",
              "name_bindings", "spans", "makes", "roots", "attr_classes")


def _drop_pass_facts(results: dict) -> None:
    """Empty each result's pass-only tables, once the cache has saved them (whole vLLM: peak RSS
    377.5 -> 370.1 MB, SGLang 518 -> 494 MB; the reports byte-identical)."""
    for result in results.values():
        for name in _PASS_ONLY:
            value = getattr(result, name, None)
            if value:
                setattr(result, name, type(value)())


class Scope:
    """Sorts a file's findings into per-step and cold (reachability.py); cold ones are kept
    only with `include_cold` (or `--all-functions`), marked with why they are cold."""

    def __init__(self, config: LintConfig, scope: dict | None) -> None:
        from .reachability import ColdLines

        self.config = config
        self.per_step = scope["functions"] if scope else None
        self.guarded = scope["cold"] if scope else {}
        self.library = config.library()
        self._lines = ColdLines
        self.keep_cold = config.include_cold or config.all_functions
        self._tools: dict[str, str] = {}  # path -> its tool word, or "" (toolpaths.tool_in_chain)

    def judge(self, rel: str, raw, kept: list, run: LintRun) -> list:
        from .branches import platform_path
        from .toolpaths import tool_path, tool_in_chain
        from syncscope.with_blocks import is_accepted

        other = platform_path(rel, self.library)
        tool = tool_path(rel, self.library)
        ranges = tuple(raw.branch_cold) + tuple(self.guarded.get(rel, ()))
        lines = self._lines(ranges) if ranges else None
        # blocks that accept their syncs: no cold code (ColdLines leaves them out), marked
        accepted = [r for r in raw.branch_cold if is_accepted(r[2])]
        out = []
        for p in kept:
            if _is_diagnostic(p.code) or p.code == "SYN900":
                out.append(p)
                continue
            why = f"file for another platform than CUDA (`{other}`)" if other else \
                f"file of a tool that is not serving (`{tool}`)" if tool else \
                (lines.why(p.line) if lines is not None else None)
            if why is None and p.chain:
                why = tool_in_chain(p.chain, self.library, self._tools)
            if why is None and p.cold:  # decided by the whole-program pass (constargs.py)
                why = p.cold
            if why is None and self.per_step is not None:
                path = self._path(raw.module, p.function)
                if path is None:
                    why = "not reached from a per-step root"
                else:
                    p = p._replace(per_step=path)
            if accepted:
                p = _mark_accepted(p, accepted)
            if why is not None:
                run.cold += 1
                if not self.keep_cold:
                    continue
                p = p._replace(cold=why)
            out.append(p)
        return out

    def _path(self, module: str | None, function: str) -> tuple | None:
        name = f"{module}.{function}" if module else function
        while name:
            found = self.per_step.get(name)
            if found is not None:
                return found
            if "." not in name or name == module:
                return None
            name = name.rsplit(".", 1)[0]  # a nested function: its parent's
        return None


def _mark_accepted(p, blocks: list):
    """`p` marked with why the code accepts it, when its line is in one of `blocks`."""
    return next((p._replace(accepted=why) for start, end, why in blocks if start <= p.line <= end), p)


def _is_diagnostic(code: str) -> bool:
    return code in ("SYN001", "SYN002", "SYN003")


def _text(data: bytes) -> str:
    if not data:
        return ""
    try:
        return decode(data)
    except Exception:
        return data.decode("utf-8", "replace")


def analyze_for_fix(path: str, config: LintConfig):
    """Re-analyze one file keeping the tree, for --fix (in this process)."""
    with open(path, "rb") as handle:
        data = handle.read()
    module, is_package = module_name(path)
    return analyze_bytes(data, module, is_package, config, keep_tree=True)
