"""Lint one file: read, parse once with libcst, run every rule in one walk, place findings on
lines. Runs in a worker process; returns only plain picklable data (and is what the cache keeps).

Never raises: an unreadable file, a syntax error or a bug in a rule becomes a diagnostic on
that file (SYN001 / SYN002 / SYN003) and the run goes on.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
import traceback
from dataclasses import dataclass, field

from .deep_stack import TooDeep, on_a_deep_stack
from .lines import locate, spans_of
from .optin import switch_words
from .records import FileFinding, Root, diagnostic
from .refill_variant import with_refills
from .source_texts import text_of_bytes
from .suppress import may_have_suppressions, parse_suppressions
from .switch_devices import switch_facts


@dataclass
class RawResult:
    """A file's analysis, independent of rule selection and suppressions (those are applied
    later, so changing `--select` reuses the cache)."""

    findings: list[FileFinding] = field(default_factory=list)
    # for the whole-program pass (wholeprogram.py): the module's dotted name and import table,
    # per-function facts and class facts (facts.py), and the sync roots of each function:
    # qualified function -> [Root]
    module: str | None = None
    exports: dict = field(default_factory=dict)
    imports: tuple = ()  # every dotted name it imports anywhere, or names in a string (imports.imported_names)
    functions: dict = field(default_factory=dict)
    classes: dict = field(default_factory=dict)
    roots: dict = field(default_factory=dict)
    suppressions: dict = field(default_factory=dict)  # line -> [Suppression], see suppress.py
    # "Class.attr" -> where, for attributes this file's classes keep on the host (classinfo.py)
    field_hints: dict = field(default_factory=dict)
    switch_facts: tuple = ()  # fields on a device a switch picks, and the switches (switch_devices.py)
    # the per-step scope (branches.py): line ranges that never run on CUDA or while serving
    # [(start, end, why)], and per function the method calls on receivers of unknown class
    branch_cold: tuple = ()
    dispatch: dict = field(default_factory=dict)
    guards: dict = field(default_factory=dict)  # function -> [(start, end, parameter)]: runs only if it is None
    # error paths (errorpaths.py): (functions all of whose paths raise, function -> [(start, end,
    # line)] of blocks that end in a call, an error path when that call always raises)
    error_paths: tuple = ((), {})
    # kernels that dispatch on where their inputs live (cuda_dispatch.py): (functions that tell,
    # function -> [(start, end, line)] of the blocks a call of one decides)
    cuda_tests: tuple = ((), {})
    # module-level names and None (modulenames.py): the names bound on CUDA conditionally or by
    # assignment -> their bindings; function -> [(start, end, qualified name)] of the lines that
    # run only when such a name is None
    name_bindings: dict = field(default_factory=dict)
    name_guards: dict = field(default_factory=dict)
    # flags a caller decides (flagguards.py): function -> [(start, end, parameter, position)] that
    # run only when the parameter (default False/None) is on; (line, column) -> what a call passes
    flag_guards: dict = field(default_factory=dict)
    flag_passes: dict = field(default_factory=dict)
    # constant arguments (constargs.py): function -> (parameters, [(start, end, test)]) of `if`
    # blocks tested on parameters; (line, column) -> the literals a call passes
    const_guards: dict = field(default_factory=dict)
    const_literals: dict = field(default_factory=dict)
    const_passes: dict = field(default_factory=dict)  # (line, column) -> parameters passed on unchanged
    none_config: dict = field(default_factory=dict)  # values None only where a test is false (confignone.py)
    element_calls: dict = field(default_factory=dict)  # calls on the items of a declared list (element_receivers.py)
    # per-request entry points (loops.py): function -> line ranges that run once per call (not
    # in a loop), class -> its bases as qualified names (None: cannot be told)
    straight: dict = field(default_factory=dict)
    bases: dict = field(default_factory=dict)
    # function -> (first, last line); (maker class or None, class it constructs) (loops.py)
    spans: dict = field(default_factory=dict)
    makes: tuple = ()
    # function -> its loops: span, header names steps, enclosing loop, own lines (loops.py)
    loops: dict = field(default_factory=dict)
    # memos on `self` (memo.py): method -> [(start, end, field)] of the lines that fill one
    memos: dict = field(default_factory=dict)
    # attribute name -> the places this file stores into it (classinfo.attribute_places)
    attr_places: dict = field(default_factory=dict)
    # the same per owner class, and the classes of fields (owner_fields.owner_facts)
    owner_fields: dict = field(default_factory=dict)
    # callee name -> the number literals this file's calls pass it (python_args.literal_calls)
    literal_calls: dict = field(default_factory=dict)
    internal_error: str | None = None
    # what field_configs.py needs from this file (None: nothing), and the inherited host-only
    # fields this result was analyzed with (engine.py walks a file again when they change)
    field_configs: object = None
    inherited_fields: frozenset = frozenset()
    carrier_facts: object = None  # what carrier_fields.py needs from this file (None: nothing)
    imported_classes: tuple = ()  # a cached result's, kept without its facts (carrier_fields.py)
    # what the file does with each capitalized name (name_uses.py; None: the pass reads the file)
    name_uses: tuple | None = None
    refills: tuple | None = None  # a keep_on_cpu field refilled on the device (refill_variant.py)
    foreign_exports: tuple = ()  # functions handed to another runtime (foreign_exports.py)
    switch_words: tuple | None = None  # what optin.off_switches reads of the text (None: not read)
    attr_classes: dict = field(default_factory=dict)  # attribute name -> the classes stored into it (attr_classes.py)
    # False for a result loaded from the cache without the fields in cache.FACT_FIELDS
    has_facts: bool = True


class Registry:
    """Selected rules, indexed by the events they listen to."""

    def __init__(self, config, rule_classes) -> None:
        from .rules.base import overrides

        self.rules = [cls(config) for cls in rule_classes]
        self.by_name: dict[str, list] = {}
        self.subscript_read, self.subscript_store, self.condition, self.attribute = [], [], [], []
        self.attribute_names: frozenset[str] = frozenset(p.rsplit(".", 1)[-1] for p in config.syncing_properties)
        for rule in self.rules:
            if overrides(rule, "on_call"):
                for name in rule.call_names():
                    self.by_name.setdefault(name, []).append(rule)
            if overrides(rule, "on_subscript_read"):
                self.subscript_read.append(rule)
            if overrides(rule, "on_subscript_store"):
                self.subscript_store.append(rule)
            if overrides(rule, "on_condition"):
                self.condition.append(rule)
            if overrides(rule, "on_attribute"):
                self.attribute.append(rule)


_REGISTRY: tuple[str, Registry] | None = None


def registry_for(config) -> Registry:
    global _REGISTRY
    key = config.analysis_key()
    if _REGISTRY is None or _REGISTRY[0] != key:
        from .rules import ALL_RULES

        _REGISTRY = (key, Registry(config, ALL_RULES))
    return _REGISTRY[1]


def decode(data: bytes) -> str:
    """Source text as Python would read it (PEP 263 cookie, BOM); raises on undecodable bytes."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    return text[1:] if text.startswith("\ufeff") else text


def analyze_file(path: str, module: str, is_package: bool, config, facts_only: bool = False,
                 inherited: frozenset[str] = frozenset()) -> RawResult:
    """`inherited`: host-only multimodal fields another module's processor declares for this
    one (field_configs.py); the engine passes them on a second walk of the few files that have
    any."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return RawResult(findings=[diagnostic("SYN001", f"cannot read file: {error.strerror}")])
    return analyze_data(data, module, is_package, config, facts_only, inherited)


def analyze_data(data: bytes, module: str, is_package: bool, config, facts_only: bool = False,
                 inherited: frozenset[str] = frozenset()) -> RawResult:
    """`analyze_file` on bytes already read."""
    global _inherited
    if facts_only:
        result = facts_of_bytes(data, module, is_package, config)
    else:
        _inherited = inherited
        try:
            result = with_refills(lambda: analyze_bytes(data, module, is_package, config))
        finally:
            _inherited = frozenset()
        result.inherited_fields = inherited
    result.switch_words = switch_words(text_of_bytes(data))
    return result


# The inherited fields of the file being analyzed, for file_hints deep below analyze_file: one file at a time
_inherited: frozenset[str] = frozenset()


def facts_of_bytes(data: bytes, module: str, is_package: bool, config) -> RawResult:
    """A file no rule can flag (no torch code): only what the whole-program pass needs to see
    calls through it. Never raises; a file that does not parse simply contributes nothing."""
    result = RawResult()
    try:
        text = decode(data)
        tree = ast.parse(text)
        _add_facts(result, tree, module, is_package, config, frozenset(), text=text)
    except Exception:
        pass
    if may_have_suppressions(data):
        try:
            result.suppressions = parse_suppressions(decode(data))
        except (UnicodeDecodeError, SyntaxError, LookupError):
            pass
    return result


def _add_facts(result: RawResult, tree, module: str, is_package: bool, config, cold_helpers, hints=None,
               name_hints=None, text: str = "") -> None:
    from .facts import file_facts
    from .imports import aliases_from_ast, imported_names, with_star_sources

    aliases = aliases_from_ast(tree, module, is_package)
    result.imports = imported_names(text, module, is_package) if text else ()

    def is_cold(name: str, classes: list[str]) -> bool:
        if config.all_functions:
            return False
        return bool(config.cold_function(name) or name in cold_helpers or any(config.cold_class(c) for c in classes))

    result.module, result.exports = module, with_star_sources(aliases, tree, module, is_package)
    from .name_uses import name_uses
    result.name_uses = name_uses(tree, text) if text else None
    from .copy_methods import with_copy_facts
    from .field_configs import file_field_configs
    from .foreign_exports import foreign_exports
    result.field_configs = file_field_configs(tree, module, aliases, text)
    result.foreign_exports = foreign_exports(tree, text, module, aliases, config.library().foreign_exports)
    result.carrier_facts = with_copy_facts(tree, text, module)
    if hints is None:
        from .classinfo import class_hints

        hints = class_hints(tree)
    result.field_hints = {f"{c}.{a}": where for (c, a), where in hints.items()}
    result.switch_facts = switch_facts(tree, text or "", config.library())
    from .classinfo import attribute_places

    result.attr_places = attribute_places(tree)
    from .owner_fields import owner_facts
    result.owner_fields = owner_facts(tree)
    from .python_args import literal_calls
    result.literal_calls = literal_calls(tree, module, is_cold)
    result.functions, result.classes, result.attr_classes = \
        file_facts(tree, module, aliases, name_hints or config.name_hints, is_cold)
    from .branches import file_branches
    result.branch_cold, result.dispatch, result.guards, result.error_paths, names, result.cuda_tests = \
        file_branches(tree, module, aliases, config.library())
    result.name_bindings, result.name_guards = names
    from .flagguards import file_flags
    result.flag_guards, result.flag_passes = file_flags(tree, module)
    from .constargs import file_const_guards
    result.const_guards, result.const_literals, result.const_passes = file_const_guards(tree, module, config.library(), result.attr_places)
    from .confignone import file_none_config
    result.none_config = file_none_config(tree, module)
    from .element_receivers import file_element_receivers
    result.element_calls = file_element_receivers(tree, module, aliases)
    from .loops import file_loop_facts
    result.straight, result.bases, result.spans, result.makes, result.loops = file_loop_facts(tree, module, aliases)
    from .memo import file_memos
    result.memos = file_memos(tree, module, config.library().field_setters, aliases, config.library().module_types)


def file_hints(tree, config, text: str):
    """The project's name conventions, plus the module's own host-only field names."""
    from .carrier_fields import module_hints

    return module_hints(tree, config.name_hints, text, _inherited)


def analyze_bytes(data: bytes, module: str, is_package: bool, config, keep_tree: bool = False):
    """The whole per-file pipeline. With keep_tree, also returns the analyzer (for --fix)."""
    try:
        outcome = _analyze_bytes(data, module, is_package, config, keep_tree)
    except TooDeep:
        outcome = on_a_deep_stack(_analyze_bytes, data, module, is_package, config, keep_tree)
        if outcome is None:  # like a file `ast.parse` itself cannot nest, never a crash
            result = RawResult(findings=[diagnostic("SYN002", "cannot parse file: nested too deeply to analyze")])
            outcome = (result, None) if keep_tree else result
    result = outcome[0] if keep_tree else outcome
    if may_have_suppressions(data):
        try:
            result.suppressions = parse_suppressions(decode(data))
        except (UnicodeDecodeError, SyntaxError, LookupError):
            pass
    return outcome


def _analyze_bytes(data: bytes, module: str, is_package: bool, config, keep_tree: bool):
    try:
        text = decode(data)
    except (UnicodeDecodeError, SyntaxError, LookupError) as error:
        result = RawResult(findings=[diagnostic("SYN001", f"cannot decode file: {error}")])
        return (result, None) if keep_tree else result
    if not text.strip():
        result = RawResult()
        return (result, None) if keep_tree else result
    if keep_tree or config.all_functions:
        return _whole_module(text, module, is_package, config, keep_tree)
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        result = RawResult(findings=[diagnostic("SYN002", f"syntax error: {error.msg}", error.lineno or 1, error.offset or 1)])
        return result
    except (ValueError, RecursionError, MemoryError) as error:
        return RawResult(findings=[diagnostic("SYN002", f"cannot parse file: {error}")])
    try:
        result = _by_function(tree, text, module, is_package, config)
    except _FallBack:
        return _whole_module(text, module, is_package, config, False)
    except Exception:
        result = _internal_error()
    return result


class _FallBack(Exception):
    """A function could not be handled on its own; lint the file as one module instead."""


def _internal_error() -> RawResult:
    if isinstance(sys.exc_info()[1], RecursionError):
        raise TooDeep()  # not a bug: analyze_bytes retries on a deeper stack
    trace = traceback.format_exc(limit=-3).strip().splitlines()
    return RawResult(findings=[diagnostic("SYN003", "internal error: " + " | ".join(trace[-3:]))],
                     internal_error="\n".join(trace))


def _whole_module(text: str, module: str, is_package: bool, config, keep_tree: bool):
    """Parse and walk the whole module with libcst: for --fix (which needs the full tree to
    rewrite), for --all-functions, and as the fallback."""
    import libcst as cst

    from .cst_parse import parse_module

    try:
        # libcst's native parser has no depth guard (tens of thousands of nested operators
        # overflow the C stack: a segfault); Python's own parser stops such input cleanly first.
        ast.parse(text)
    except (RecursionError, MemoryError) as error:
        reason = str(error) or f"nested too deeply ({type(error).__name__})"
        result = RawResult(findings=[diagnostic("SYN002", f"cannot parse file: {reason}")])
        return (result, None) if keep_tree else result
    except (SyntaxError, ValueError):
        pass  # reported from libcst's parse below, with its position
    try:
        module_node = parse_module(text)
    except cst.ParserSyntaxError as error:
        message = str(error).splitlines()[0] if str(error) else "invalid syntax"
        result = RawResult(findings=[diagnostic("SYN002", f"syntax error: {message}", error.raw_line, error.raw_column + 1)])
        return (result, None) if keep_tree else result
    except Exception as error:  # libcst's native parser: recursion limits and the like
        result = RawResult(findings=[diagnostic("SYN002", f"cannot parse file: {type(error).__name__}: {error}")])
        return (result, None) if keep_tree else result
    try:
        result, analyzer = _analyze(module_node, text, module, is_package, config)
    except Exception:  # a bug of ours: report it on this file and go on
        result, analyzer = _internal_error(), None
    return (result, analyzer) if keep_tree else result


def _by_function(tree, text: str, module: str, is_package: bool, config) -> RawResult:
    """The fast path: `ast` finds the functions worth linting (hot, and mentioning anything a
    rule looks for); only those are parsed by libcst, each on its own. On vLLM that is ~40% of
    the lines, and libcst's parse is what a lint run spends its time on."""
    import libcst as cst

    from .analyzer import ModuleAnalyzer
    from .compiled import tree_constants
    from .cst_parse import parse_module
    from .files import function_trigger
    from .quiet_functions import may_fire
    from .callgraph import cold_private_helpers
    from .classinfo import class_hints
    from .imports import aliases_from_ast

    registry = registry_for(config)
    aliases = aliases_from_ast(tree, module, is_package)
    hints = class_hints(tree)
    name_hints = file_hints(tree, config, text)
    lines = text.splitlines(keepends=True)
    plain_lines = text.splitlines()
    trigger = function_trigger(config)
    result = RawResult()
    units = list(_functions(tree.body, [], config))
    graph: dict[str, tuple[bool, frozenset[str]]] = {}
    for fn, _, cold, _memo in units:
        segment = lines[fn.lineno - 1: fn.end_lineno]
        calls = _called_names("".join(segment[1:]) if len(segment) > 1 else segment[0].split(":", 1)[-1])
        was_cold, known = graph.get(fn.name, (True, frozenset()))
        graph[fn.name] = (was_cold and cold, known | calls)
    cold_helpers = cold_private_helpers(graph)
    constants = None  # compiled.py: the module's constants, read once the first walk needs them
    for fn, classes, cold, memo in units:
        if (cold and not memo) or fn.name in cold_helpers:
            continue
        # from the first decorator: the walk needs to see a memoizing one
        first = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
        segment = lines[first - 1: fn.end_lineno]
        source = "".join(segment)
        if not trigger.search(source) or not may_fire(fn, registry.by_name, registry.attribute_names, aliases):
            continue
        indent = fn.col_offset
        if indent:
            pad = segment[0][:indent]
            source = "".join(line[indent:] if line.startswith(pad) else line for line in segment)
        try:
            mini = parse_module(source)
        except Exception:
            raise _FallBack()
        if len(mini.body) != 1 or not isinstance(mini.body[0], cst.FunctionDef):
            raise _FallBack()
        spans = spans_of([fn])
        analyzer = ModuleAnalyzer(mini, spans, config, registry, module, is_package)
        analyzer.hints, analyzer.aliases, analyzer.file_tree = name_hints, aliases, tree  # (field_makers.py)
        analyzer.class_hints = hints
        analyzer.compiled_constants = constants if constants is not None else (constants := tree_constants(tree))
        analyzer.run_function(mini.body[0], classes)
        if analyzer.counter != len(spans):
            raise _FallBack()
        _collect(analyzer, spans, plain_lines, result)
    _add_facts(result, tree, module, is_package, config, frozenset(cold_helpers), hints, name_hints, text=text)
    return result


def _functions(body, classes: list[str], config):
    """(ast function, enclosing class names, cold, memoized) for every top-level function and
    method. Cold ones are named like code that runs once, or are Triton/JIT kernels or memoized;
    a memoized one (`@lru_cache`, `@cached_property`) is still walked for its callers' sake
    (its syncs are theirs, wholeprogram.py). Nested functions are part of their parent."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = _decorated_kind(node)
            memo = kind == "memo" and not config.cold_function(node.name)
            yield node, classes, bool(config.cold_function(node.name) or kind), memo
        elif isinstance(node, ast.ClassDef):
            if config.cold_class(node.name) and not config.all_functions:
                for inner, inner_classes, _, _ in _functions(node.body, classes + [node.name], config):
                    yield inner, inner_classes, True, False
            else:
                yield from _functions(node.body, classes + [node.name], config)
        elif isinstance(node, (ast.If, ast.With, ast.For, ast.While, ast.Try)) or type(node).__name__ == "TryStar":
            yield from _functions(node.body, classes, config)
            yield from _functions(getattr(node, "orelse", []), classes, config)
            for handler in getattr(node, "handlers", []):
                yield from _functions(handler.body, classes, config)
            yield from _functions(getattr(node, "finalbody", []), classes, config)


# a whole identifier before `(`: `f(`, and the last name of `self.f(` and `obj.f(`
_CALLED = re.compile(r"(?<!\w)(\w+)\s*\(")


def _called_names(source: str) -> frozenset[str]:
    """Names this code calls (`f(`, `self.f(`, `obj.f(`), read with a regular expression:
    only used to tell which functions are called from hot code at all (see callgraph.py)."""
    return frozenset(map(sys.intern, _CALLED.findall(source)))


def _decorated_kind(node) -> str | None:
    """"kernel" for Triton/JIT kernels (device code), "memo" for memoized functions and cached
    properties (their body runs once per key), None otherwise."""
    from .vocabulary import decorator_kind

    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call):
            decorator = decorator.func
        parts = []
        while isinstance(decorator, ast.Attribute):
            parts.append(decorator.attr)
            decorator = decorator.value
        if isinstance(decorator, ast.Name):
            parts.append(decorator.id)
        kind = decorator_kind(".".join(reversed(parts)))
        if kind is not None:
            return kind
    return None


def _analyze(module_node, text: str, module: str, is_package: bool, config):
    from .analyzer import ModuleAnalyzer

    from .classinfo import class_hints

    registry = registry_for(config)
    try:
        tree = ast.parse(text)
        spans, hints = spans_of(tree.body), class_hints(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        tree, spans, hints = None, None, {}
    name_hints = file_hints(tree, config, text) if tree is not None else config.name_hints
    analyzer = ModuleAnalyzer(module_node, spans or [], config, registry, module, is_package)
    analyzer.hints, analyzer.file_tree = name_hints, tree  # (caller_classes.py)
    analyzer.class_hints = hints
    analyzer.run()
    if spans is None or analyzer.counter != len(spans):
        # the ast and libcst statement walks disagree (or ast failed): use libcst's own positions
        spans = _spans_from_libcst(module_node)
        analyzer = ModuleAnalyzer(module_node, spans, config, registry, module, is_package)
        analyzer.hints, analyzer.file_tree = name_hints, tree
        analyzer.class_hints = hints
        analyzer.run()
    result = RawResult()
    _collect(analyzer, spans, text.splitlines(), result)
    result.field_hints = {f"{c}.{a}": where for (c, a), where in hints.items()}
    if tree is not None:
        _add_facts(result, tree, module, is_package, config, frozenset(), hints, name_hints, text=text)
    return result, analyzer


def _collect(analyzer, spans, lines: list[str], result: RawResult) -> None:
    """Place the analyzer's findings and call sites on lines and add them to `result`."""
    for raw in analyzer.findings:
        line, column, start, end = place(raw, spans, lines, analyzer.module)
        condition = _device_condition(raw)
        result.findings.append(FileFinding(raw.code, line, column, start, end, raw.function, raw.message,
                                           raw.fix.applicability if raw.fix else None, raw.level,
                                           field=raw.field, param=raw.param, origin=raw.origin,
                                           device_condition=condition, python_arg=raw.python_arg))
        if _is_root(raw, condition):
            _add_root(result, raw, analyzer.module_name, line, start, end, condition)
    for raw in analyzer.latent:
        condition = _device_condition(raw)
        if _is_root(raw, condition):
            line, _, start, end = place(raw, spans, lines, analyzer.module)
            _add_root(result, raw, analyzer.module_name, line, start, end, condition)


def _device_condition(raw) -> tuple | None:
    """A finding's `FileFinding.device_condition`: the attribute it needs on the device, if any."""
    needs = raw.needs_device
    return (needs.name, raw.needs_vector, needs.owner) if needs is not None else None


def _is_root(raw, condition) -> bool:
    """Whether a finding is a sync for the function's callers: not one that holds only for a
    Python number some caller passes, nor a conditional one unless its rule says
    (Rule.ROOT_ON_CONDITION)."""
    return (condition is None or raw.root_on_condition) and raw.python_arg is None


def _add_root(result: RawResult, raw, module: str, line: int, start: int, end: int, condition=None) -> None:
    """A sync of the function's own body, for the whole-program pass: unconditional, or on a
    parameter (the finding's value is computed from it); with `condition`, only where the tree
    keeps an attribute on the device (Rule.ROOT_ON_CONDITION: program.py decides)."""
    function = f"{module}.{raw.function}" if module else raw.function
    param = raw.param[1] if raw.param else None
    if raw.param and raw.param[0] != function:
        # a nested function's sync on its enclosing function's parameter (a closure): a sync
        # of the enclosing function when its callers pass a device value, not of each call of
        # the nested one (context.inherit_closure_sources)
        function = raw.param[0]
    result.roots.setdefault(function, []).append(Root(raw.code, line, start, end, raw.message, param, raw.origin,
                                                      condition))


def place(raw, spans, lines: list[str], module_node) -> tuple[int, int, int, int]:
    """(line, column, statement start, statement end) of an analyzer finding: the first of its
    anchors found in its statement's lines."""
    start, end, _ = spans[raw.stmt] if raw.stmt < len(spans) else (1, 1, 1)
    line, column = locate(lines, start, end, [_anchor_text(a, module_node) for a in raw.anchors])
    return line, column, start, end


def _anchor_text(anchor, module_node) -> str:
    if isinstance(anchor, str):
        return anchor
    code = module_node.code_for_node(anchor)
    for line in code.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _spans_from_libcst(module_node) -> list[tuple[int, int, int]]:
    """Statement spans in the analyzer's pre-order, from libcst's PositionProvider. Slow, only
    used when `ast` cannot parse the file or counts statements differently."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    wrapper = MetadataWrapper(module_node, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    spans: list[list[int]] = []
    stack: list[int] = []

    class Collector(cst.CSTVisitor):
        def _open(self, node) -> None:
            pos = positions[node]
            stack.append(len(spans))
            spans.append([pos.start.line, pos.end.line, 0])

        def _close(self, node) -> None:
            index = stack.pop()
            spans[index][2] = len(spans) - index

        def on_visit(self, node) -> bool:
            if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                self._open(node)
            return True

        def on_leave(self, node) -> None:
            if isinstance(node, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
                self._close(node)

    wrapper.module.visit(Collector())
    return [tuple(s) for s in spans]
