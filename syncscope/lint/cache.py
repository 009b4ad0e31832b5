"""Content-hash cache: an unchanged file is not read by libcst again.

One pickle per (tool version, analysis config) in `<root>/.syncscope_cache/`, mapping the
relative path to (content hash, (mtime, size), RawResult). A single file loads in a few milliseconds, which is
what makes a no-change rerun fast; it is replaced atomically, so concurrent runs at worst redo
some work. Entries for files not seen in a run are kept, so linting a subdirectory does not
evict the rest of the tree.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile

CACHE_FORMAT = 9  # bump when RawResult changes shape


def code_stamp() -> str:
    """Changes whenever the linter's own code does (size and mtime of its modules), so a new
    version or a local edit of a rule never reads results computed by the old code."""
    base = os.path.dirname(os.path.abspath(__file__))
    parts = []
    for directory in (base, os.path.join(base, "rules")):
        for name in sorted(os.listdir(directory)):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(directory, name))
                parts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.blake2b("|".join(parts).encode(), digest_size=6).hexdigest()


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class Cache:
    def __init__(self, root: str, cache_dir: str, config_key: str) -> None:
        directory = cache_dir if os.path.isabs(cache_dir) else os.path.join(root, cache_dir)
        self.directory = directory
        self.path = os.path.join(directory, f"lint-v{CACHE_FORMAT}-{code_stamp()}-{config_key}.pickle")
        self.entries: dict[str, tuple[str, tuple[int, int] | None, object]] = {}
        self.dirty = False
        try:
            with open(self.path, "rb") as handle:
                loaded = pickle.load(handle)
            if isinstance(loaded, dict):
                self.entries = loaded
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
            self.entries = {}  # no cache yet, or one we cannot read: start over

    def get(self, rel_path: str, digest: str):
        entry = self.entries.get(rel_path)
        if entry is not None and entry[0] == digest:
            return entry[2]
        return None

    def get_unchanged(self, rel_path: str, stamp: tuple[int, int]):
        """The result for a file whose modification time and size are what they were when it
        was analyzed: it is not even read (what makes a no-change rerun fast on big trees).
        Any other file is read and looked up by content hash."""
        entry = self.entries.get(rel_path)
        if entry is not None and entry[1] == stamp:
            return entry[2]
        return None

    def put(self, rel_path: str, digest: str, result, stamp: tuple[int, int] | None = None) -> None:
        if result.internal_error:  # never cache our own failures
            return
        self.entries[rel_path] = (digest, stamp, result)
        self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
            gitignore = os.path.join(self.directory, ".gitignore")
            if not os.path.exists(gitignore):
                with open(gitignore, "w") as handle:
                    handle.write("*\n")
            fd, temp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(self.entries, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temp, self.path)
            for name in os.listdir(self.directory):  # results of older linter versions
                if name.startswith("lint-v") and os.path.join(self.directory, name) != self.path:
                    os.unlink(os.path.join(self.directory, name))
        except OSError:
            pass  # a read-only tree still lints, just without a cache
