"""A sync site: the one notion shared by the runtime trap, the linter, the baseline and the gate.

A site is a place in source code where the host waits (or may wait) for the device. The runtime
finds sites by watching a program, the linter by reading source; both produce `Site`s, and
everything downstream (reports, baselines, the gate) only ever compares sites.

The fingerprint deliberately leaves the line number out: it is built from the kind (or rule code),
the path relative to the project root, the enclosing `Class.function`, the normalised source text
of the statement and an occurrence index among identical statements of that function. Inserting
lines above a site, or renaming an unrelated function, leaves it unchanged; a second identical line
in the same function is a different site (occurrence 1), and so is one in another function.

Standard library only: the linter imports this and must never pay for torch.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import tokenize
from dataclasses import dataclass, field, replace
from typing import Iterable

_WHITESPACE = re.compile(r"\s+")


@dataclass(frozen=True, order=True)
class Site:
    """Where the host waits. `kind` is a runtime kind (`item`, `bool_mask_index`, ...) or a lint
    rule code (`SYN101`); `function` is the enclosing qualified name (`Builder.build`), `<module>`
    at the top level; `source` is the stripped text of the line."""

    path: str
    line: int
    function: str
    kind: str
    source: str = ""
    occurrence: int = field(default=0, compare=False)

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"

    def fingerprint(self) -> str:
        return fingerprint(self.kind, self.path, self.function, self.source, self.occurrence)


def normalise_source(text: str) -> str:
    """Source text with comments dropped and whitespace collapsed, so reformatting a line or
    editing its comment keeps its identity."""
    text = text.strip()
    if "#" in text:
        try:
            tokens = [
                tok
                for tok in tokenize.generate_tokens(io.StringIO(text).readline)
                if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)
            ]
            text = tokenize.untokenize(tokens)
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass  # a fragment of a multi-line statement: keep it as written
    return _WHITESPACE.sub(" ", text).strip()


# Rule codes that name one sync seen two ways share an identity: a call into a helper that syncs
# on its argument (SYN601) is also a call that reaches a sync (SYN602), and which of the two the
# linter reports can change with an edit elsewhere (a helper's parameter renamed). A baseline must
# see the same call and the same sync, not one site fixed and one new (issue 28).
_SAME_SYNC = {"SYN601": "SYN602"}


def identity_kind(kind: str) -> str:
    """The kind as the fingerprint sees it."""
    return _SAME_SYNC.get(kind, kind)


def fingerprint(kind: str, path: str, function: str, source: str, occurrence: int = 0) -> str:
    key = "\x1f".join((identity_kind(kind), path.replace(os.sep, "/"), function, normalise_source(source), str(occurrence)))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


def with_occurrences(sites: Iterable[Site]) -> list[Site]:
    """Number identical sites (same kind, path, function and normalised source) by line order,
    so each gets a distinct, edit-stable fingerprint."""
    ordered = sorted(set(sites), key=lambda s: (s.path, s.line, s.kind, s.function))
    seen: dict[tuple[str, str, str, str], int] = {}
    numbered = []
    for site in ordered:
        key = (identity_kind(site.kind), site.path, site.function, normalise_source(site.source))
        index = seen.get(key, 0)
        seen[key] = index + 1
        numbered.append(replace(site, occurrence=index))
    return numbered


def relative_path(path: str, root: str | None = None) -> str:
    """`path` relative to the project root (posix separators); absolute paths outside the root
    stay absolute so they are never confused with project files."""
    root = os.path.abspath(root or os.getcwd())
    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, root)
    except ValueError:  # another drive on Windows
        return absolute.replace(os.sep, "/")
    if rel.startswith(".."):
        return absolute.replace(os.sep, "/")
    return rel.replace(os.sep, "/")
