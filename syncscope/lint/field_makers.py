"""Fields a `synchronize()` on which waits for no GPU: what builds the object a method reads.

SGLang's `NgramWorker` holds `self.ngram_corpus = NgramCorpus(...)` and calls
`self.ngram_corpus.synchronize()`; `NgramCorpus` holds `self._obj = cls(...)` with `cls =
get_ngram_corpus_cls()`, a native extension class whose `synchronize()` waits on a host condition
variable. Neither is a torch stream, event or device module. The fact: `self.x.synchronize()` in a
method of a class every one of whose `self.x = ...` in the file is a call of something that is not
torch's and is not named for an event, a stream, a device or a platform, is no CUDA sync. A class
of the tree whose `synchronize` does sync is still found: the whole-program pass follows the call
into that method (SYN602). A field also given anything else (a parameter: `self._done =
done_event`, an attribute, `torch.cuda.Event()`, `self.device_module.Event()`) keeps the rule's
reading by the receiver's name.

Read from the file's `ast` (the worker hands the analyzer its tree; the slow path parses the
module's code again), once per file, only when such a call is met.
"""

from __future__ import annotations

import ast

import libcst as cst

from .ast_annotations import dotted
from .classinfo import self_assignments

_SYNC_WORDS = ("event", "stream", "device", "accelerator", "cuda", "platform")


def foreign_field(ctx, receiver) -> bool:
    """`receiver` is `self.attr`, and every `self.attr = ...` of the class makes an object that
    is no torch stream, event or device module."""
    if not (isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name)
            and receiver.value.value == "self" and ctx.classes):
        return False
    makers = _makers(ctx.analyzer).get((ctx.classes[-1], receiver.attr.value))
    if not makers:
        return False
    aliases = ctx.alias_table()
    for maker in makers:
        if maker is None:
            return False
        root, _, rest = maker.partition(".")
        target = aliases.get(root)
        made_by = (f"{target}.{rest}" if rest else target) if target else maker
        last = made_by.rsplit(".", 1)[-1].lower()
        if made_by.startswith("torch.") or made_by == "torch" or any(word in last for word in _SYNC_WORDS):
            return False
    return True


def _makers(analyzer) -> dict:
    tree = getattr(analyzer, "file_tree", None)
    if tree is None:
        found = getattr(analyzer, "field_makers", None)
        if found is None:
            try:
                found = field_makers(ast.parse(analyzer.module.code))
            except (SyntaxError, ValueError, RecursionError):
                found = {}
            analyzer.field_makers = found
        return found
    found = getattr(tree, "syncscope_field_makers", None)
    if found is None:
        found = tree.syncscope_field_makers = field_makers(tree)  # once per file
    return found


def field_makers(tree: ast.Module) -> dict:
    """(class name, attribute) -> the dotted callee of each call assigned to `self.attribute` in
    the class's methods (None for a value that is no call of a dotted name; `self.x = None` is
    left out)."""
    found: dict = {}

    def visit(body) -> None:
        for stmt in body:
            if isinstance(stmt, ast.ClassDef):
                for item in stmt.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        for attr, value, _ in self_assignments(item):
                            if value is None or (isinstance(value, ast.Constant) and value.value is None):
                                continue
                            maker = dotted(value.func) if isinstance(value, ast.Call) else None
                            found.setdefault((stmt.name, attr), []).append(maker)
                visit(stmt.body)

    visit(tree.body)
    return found

