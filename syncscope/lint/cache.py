"""Content-hash cache: an unchanged file is not read by libcst again, and an unchanged tree is
not solved again.

Pickles per (tool version, analysis config) in `<root>/.syncscope_cache/`:
  * `…-files.pickle`: relative path -> (content hash, (mtime, size), RawResult without its
    whole-program facts). Loaded on every run. `…-files-delta.pickle` holds the entries put
    since the table was last written whole (a pre-commit run on one edited file writes a few
    kilobytes, not the ~9 MB table: whole vLLM); past DELTA_KEPT entries the table is
    written whole again and the delta dropped.
  * `…-facts-NN.pickle` (FACT_SHARDS of them, a file's shard by its path): relative path ->
    (content hash, whole-program facts pickled on their own). Several times larger (every
    function's calls); loaded only when the whole-program pass has to run again, or for the
    one shard of a file that an edit changed, and each file's facts are unpickled only when
    that file is linted: loading and rewriting a shard is then a copy of bytes, not a rebuild
    of millions of objects.
  * `…-solved-<tree>.pickle`: the whole-program pass's output for one tree, keyed by every
    file's content hash; the SOLVED_KEPT newest are kept. A rerun with nothing changed reads
    this and skips the pass.
  * `…-scans.pickle`: the answers of the pass's last scans of the files' text, by scan,
    pattern and content hash (text_scans.py): a rerun of the pass reads only edited files.
Each is replaced atomically, so concurrent runs at worst redo some work: every entry carries
the content hash it was made from, so one that another run made stale is a miss, never a wrong
answer. Entries for files not seen in a run are kept, so linting a subdirectory does not evict
the rest of the tree.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import tempfile
import zlib
from dataclasses import replace

CACHE_FORMAT = 77  # bump when RawResult or a record it holds (records.py) changes shape
# what only the whole-program pass reads
FACT_FIELDS = ("exports", "imports", "functions", "classes", "roots", "dispatch", "guards", "flag_guards", "flag_passes",
               "straight", "loops", "bases", "error_paths", "cuda_tests", "name_bindings", "name_guards",
               "const_guards", "const_literals", "const_passes", "memos",
               "none_config", "element_calls", "name_uses", "foreign_exports", "switch_words", "attr_classes")
SOLVED_KEPT = 4  # trees remembered (e.g. the whole repository and a subdirectory or two)
FACT_SHARDS = 16  # ~2 MB each on whole vLLM
DELTA_KEPT = 256  # file entries written apart from the files table before it is rewritten whole


_SHARED = ("with_blocks.py",)


def code_stamp() -> str:
    """Changes whenever the linter's own code does (size and mtime of its modules and of its
    built-in library facts), so a new version or a local edit of a rule or a fact never reads
    results computed by the old code."""
    base = os.path.dirname(os.path.abspath(__file__))
    parts = []
    for directory in (base, os.path.join(base, "rules")):
        for name in sorted(os.listdir(directory)):
            # the built-in library facts too: the whole-program pass reads them, and its
            # output is cached by the tree's files alone
            if name.endswith((".py", ".toml")):
                stat = os.stat(os.path.join(directory, name))
                parts.append(f"{name}:{stat.st_size}:{stat.st_mtime_ns}")
    for shared in _SHARED:  # the modules outside lint/ whose reading of the code the linter keeps
        stat = os.stat(os.path.join(os.path.dirname(base), shared))
        parts.append(f"{shared}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.blake2b("|".join(parts).encode(), digest_size=6).hexdigest()


def content_hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def tree_key(digests: dict[str, str]) -> str:
    """One hash for a set of files and their contents: the whole-program pass's input."""
    h = hashlib.blake2b(digest_size=16)
    for rel in sorted(digests):
        h.update(f"{rel}\0{digests[rel]}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


class Cache:
    def __init__(self, root: str, cache_dir: str, config_key: str) -> None:
        directory = cache_dir if os.path.isabs(cache_dir) else os.path.join(root, cache_dir)
        self.directory = directory
        self.prefix = os.path.join(directory, f"lint-v{CACHE_FORMAT}-{code_stamp()}-{config_key}")
        self.entries: dict[str, tuple[str, tuple[int, int] | None, object]] = _load(self._file("files"), dict)
        self._delta: dict = _load(self._file("files-delta"), dict)  # entries newer than the table's
        self.entries.update(self._delta)
        self._put: set[str] = set()  # paths whose entry this run put
        self._facts: dict[int, dict[str, tuple[str, object]]] = {}  # shard -> its table, loaded on first need
        self._facts_dirty: set[int] = set()
        self._solved: dict[str, object] = {}  # tree key -> the pass's output, read or put in this run
        self._solved_new: list[str] = []
        self._scans: dict | None = None  # text_scans.py's answers, loaded on first need
        self._scans_new = False
        self.dirty = False

    @property
    def facts_dirty(self) -> bool:
        return bool(self._facts_dirty)

    @property
    def solved_dirty(self) -> bool:
        return bool(self._solved_new)

    def _file(self, part: str) -> str:
        return f"{self.prefix}-{part}.pickle"

    def digest_of(self, rel_path: str) -> str | None:
        entry = self.entries.get(rel_path)
        return entry[0] if entry is not None else None

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
        self.dirty = True
        if result.has_facts:  # else it came from this cache with these facts already stored
            shard = _shard(rel_path)
            facts = self._facts_shard(shard)
            if rel_path not in facts or facts[rel_path][0] != digest:
                # the result itself, pickled only when the table is written (`_write`): while the
                # workers run, the parent holds the facts once, not also as ~34 MB of bytes
                # (whole vLLM), and the run's peak memory is then (parent and workers together)
                facts[rel_path] = (digest, result)
                self._facts_dirty.add(shard)
        self.entries[rel_path] = (digest, stamp, _without_facts(result))
        self._put.add(rel_path)

    def with_facts(self, rel_path: str, result):
        """`result` with its whole-program facts, read from the facts pickle when the result
        came from the small one (None when they are missing: the caller re-analyzes)."""
        if result.has_facts:
            return result
        entry = self._facts_shard(_shard(rel_path)).get(rel_path)
        if entry is None or entry[0] != self.digest_of(rel_path):
            return None
        if not isinstance(entry[1], bytes):  # put in this run, not pickled yet
            values = _facts_of(entry[1])
        else:
            try:
                values = pickle.loads(entry[1])
            except Exception:  # a damaged entry: the caller re-analyzes the file
                return None
        return replace(result, **dict(zip(FACT_FIELDS, values)), has_facts=True)

    def previous(self, rel_path: str):
        """What this cache holds for a file, with its whole-program facts (None when it holds
        no whole result): called before an edited file's new result replaces it (lineshift.py)."""
        entry = self.entries.get(rel_path)
        return self.with_facts(rel_path, entry[2]) if entry is not None else None

    def flush_facts(self) -> None:
        """Write the facts tables now and let go of them: called once every result's facts are
        loaded, before the whole-program pass, so the pass does not run beside the tables'
        pickled bytes (they are pickled from the results put in this run, before the pass
        reads them). A later `with_facts` reads the files again."""
        try:
            self._write_facts()
        except OSError:
            return  # kept: `save` tries again, or the tree is read-only
        self._facts = {}

    def _write_facts(self) -> None:
        if self._facts_dirty:
            os.makedirs(self.directory, exist_ok=True)
        for shard in sorted(self._facts_dirty):
            self._write(f"facts-{shard:02d}", _pickled_facts(self._facts[shard]))
            self._facts_dirty.discard(shard)

    def _facts_shard(self, shard: int) -> dict:
        if shard not in self._facts:
            self._facts[shard] = _load(self._file(f"facts-{shard:02d}"), dict)
        return self._facts[shard]

    def get_solved(self, key: str):
        if key not in self._solved:
            path = self._file(f"solved-{key}")
            found = _load(path, tuple)
            self._solved[key] = found[1] if len(found) == 2 and found[0] == key else None
            if self._solved[key] is not None:
                try:  # used: kept before the trees not used since (`_drop_old_files`)
                    os.utime(path)
                except OSError:
                    pass
        return self._solved[key]

    def put_solved(self, key: str, value) -> None:
        self._solved[key] = value
        self._solved_new.append(key)

    def get_scans(self) -> dict:
        if self._scans is None:
            self._scans = _load(self._file("scans"), dict)
        return self._scans

    def put_scans(self, scans: dict) -> None:
        self._scans = scans
        self._scans_new = True

    def save(self) -> None:
        if not (self.dirty or self.facts_dirty or self.solved_dirty or self._scans_new):
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
            gitignore = os.path.join(self.directory, ".gitignore")
            if not os.path.exists(gitignore):
                with open(gitignore, "w") as handle:
                    handle.write("*\n")
            if self.dirty:
                self._save_entries()
            self._write_facts()
            for key in self._solved_new:
                self._write(f"solved-{key}", (key, self._solved[key]))
            self._solved_new = []
            if self._scans_new:
                self._write("scans", self._scans)
                self._scans_new = False
            self._drop_old_files()
        except OSError:
            pass  # a read-only tree still lints, just without a cache

    def _save_entries(self) -> None:
        """The files table whole, or only the entries put since it was (a few files edited)."""
        delta = dict(self._delta)
        delta.update((rel, self.entries[rel]) for rel in self._put)
        if len(delta) > DELTA_KEPT:
            self._write("files", self.entries)
            try:  # the table holds them now (a run reading the old delta meanwhile only misses)
                os.unlink(self._file("files-delta"))
            except FileNotFoundError:
                pass
            self._delta = {}
        else:
            self._write("files-delta", delta)
            self._delta = delta
        self._put = set()
        self.dirty = False

    def _drop_old_files(self) -> None:
        """The pickles of older linter versions or configurations, and all but the newest
        SOLVED_KEPT solved trees."""
        base = os.path.basename(self.prefix)
        solved = []
        for name in os.listdir(self.directory):
            if not (name.startswith("lint-v") and name.endswith(".pickle")):
                continue
            path = os.path.join(self.directory, name)
            if not name.startswith(base + "-"):
                os.unlink(path)
            elif name.startswith(base + "-solved-"):
                solved.append((os.stat(path).st_mtime_ns, path))
        for _, path in sorted(solved, reverse=True)[SOLVED_KEPT:]:
            os.unlink(path)

    def _write(self, part: str, value) -> None:
        fd, temp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temp, self._file(part))
        except BaseException:
            os.unlink(temp)
            raise


def _shard(rel_path: str) -> int:
    return zlib.crc32(rel_path.encode("utf-8", "surrogateescape")) % FACT_SHARDS


def _facts_of(result) -> tuple:
    return tuple(getattr(result, name) for name in FACT_FIELDS)


def _pickled_facts(table: dict) -> dict:
    """The facts table as written: each file's facts pickled on their own (entries put in this
    run still hold their result), so a later run unpickles only the files it lints."""
    return {rel: (digest, value if isinstance(value, bytes) else
                  pickle.dumps(_facts_of(value), protocol=pickle.HIGHEST_PROTOCOL))
            for rel, (digest, value) in table.items()}


def _without_facts(result):
    """The result as the files table keeps it: without the facts only the whole-program pass
    reads, but with what the engine reads of them before that pass (the class names the file
    imports: carrier_fields.imported_classes), or a rerun on this cache would decide otherwise."""
    if not result.has_facts:
        return result
    from .carrier_fields import imported_classes

    return replace(result, **{name: {} for name in FACT_FIELDS}, has_facts=False,
                   imported_classes=imported_classes(result))


def _load(path: str, kind):
    # the cyclic collector paused: unpickling makes millions of objects (none cyclic), and the
    # full collections they set off scan the growing heap (0.27 -> 0.13 s for whole vLLM's files)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        with open(path, "rb") as handle:
            loaded = pickle.load(handle)
        return loaded if isinstance(loaded, kind) else kind()
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError, TypeError):
        return kind()  # no cache yet, or one we cannot read: start over
    finally:
        if was_enabled:
            gc.enable()
