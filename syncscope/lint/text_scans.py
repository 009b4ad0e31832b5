"""The whole-program pass's scans of the linted files' text, each file's answer kept by its
content hash across runs.

A few facts of the pass read every linted file's text with a pattern that only the whole tree
decides: the classes built only for another platform (platform_built.py: which files name a
candidate), the switches off by default (optin.py: which files read one, what each such file
builds behind one, and where the tree constructs those classes), the keywords some call
passes (flagguards.py) and the stores of a field by a class's family (env_switches.py). The
per-file analysis cannot answer them, since it does not know the pattern. But a file's answer
depends on nothing but its bytes and the pattern, and an edit of one staged file that changes
its facts reruns the pass with the same patterns: on whole vLLM those scans read and searched
~2,000 files again, about a quarter of that rerun. So each answer is kept under (scan,
pattern, the file's content hash) in the lint cache (`Cache.get_scans`), and a rerun reads
only the files whose content it has not scanned for that pattern. A run without a cache
scans as before.

What is kept is only this run's answers (the tree's current files), so the table never grows
past one tree's worth, however many edits came before.
"""

from __future__ import annotations

from typing import Callable

from .cache import content_hash
from .source_texts import text_of_bytes


class TextScans:
    """The linted files' texts as the pass reads them. `sources`: each linted path's file (the
    engine's absolute paths; else the path as it is); `digests`: each path's content hash as
    the analysis read it; `memo`: the answers an earlier run kept ({(scan, key): {content hash:
    answer}})."""

    def __init__(self, sources: dict | None = None, digests: dict | None = None, memo: dict | None = None) -> None:
        self.sources = sources
        self.digests = digests or {}
        self.memo = memo or {}
        self.kept: dict[tuple, dict] = {}  # this run's answers, for the cache

    def text(self, path: str) -> str | None:
        """The file's text (None when it cannot be read), read now."""
        data = self._bytes(path)
        return text_of_bytes(data) if data is not None else None

    def answers(self, scan: str, key, paths, answer: Callable[[str], object]) -> dict | None:
        """{path: answer(text)} for each of `paths`, or None when one of them cannot be read (a
        file not read may hold anything). `scan` names the question and `key` is the pattern
        (hashable, the same for the same pattern); an answer must not be changed by its reader,
        as the next run gets the same object's copy."""
        known = self.memo.get((scan, key), {})
        kept = self.kept.setdefault((scan, key), {})
        found = {}
        for path in paths:
            digest = self.digests.get(path)
            if digest is not None and digest in known:
                value = known[digest]
            else:
                data = self._bytes(path)
                text = text_of_bytes(data) if data is not None else None
                if text is None:
                    return None
                value = answer(text)
                digest = content_hash(data)  # what was read now: an edit since the analysis is its own entry
            kept[digest] = value
            found[path] = value
        return found

    def _bytes(self, path: str) -> bytes | None:
        try:
            with open((self.sources or {}).get(path, path), "rb") as handle:
                return handle.read()
        except OSError:
            return None


class LazyTexts:
    """{path: text} of some files, each read on first use and then held: optin.py's files that
    read an off switch, which switch_args.py reads again only for the few calls it checks."""

    def __init__(self, texts: TextScans, paths) -> None:
        self.texts = texts
        self.paths = list(paths)
        self._held = frozenset(self.paths)
        self._read: dict[str, str | None] = {}

    def __bool__(self) -> bool:
        return bool(self.paths)

    def __iter__(self):
        return iter(self.paths)

    def get(self, path: str) -> str | None:
        if path not in self._held:
            return None
        if path not in self._read:
            self._read[path] = self.texts.text(path)
        return self._read[path]
