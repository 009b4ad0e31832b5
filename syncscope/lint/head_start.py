"""A head start for a run on a few named files (the pre-commit hook's `syncscope lint a.py`).

Such a run spends its first ~0.3 s on work that does not need the edited file's analysis (the
project's files found, the cache's tables loaded, every other file's stamp compared), and then
analyzes the edited file on its own (~0.5 s with libcst's import). Both are serial in one
process, while the machine has other cores. So a forked child analyzes the named files from
the start, and the run takes its results when it gets to them, as long as they are what it
would have computed itself: the same bytes (content hash), the same facts-only choice, and no
fields inherited from another module (field_configs.py: known only once the cache is read).
When a named file turns out unchanged, the child is killed unread. Where the run should stay
one process (`--jobs 1`, no `fork`, other threads running in it, as in an editor's plug-in, or
no process to spare) there is no child. Whatever the child cannot deliver (it crashed, was
killed, sent something unreadable) the run analyzes itself, as it would without a head start.

The child writes nothing but its pipe and leaves with `os._exit`: no cache file, no output,
no exit handlers of the parent's run twice."""

from __future__ import annotations

import os
import pickle
import signal
import threading

from ..site import relative_path
from .cache import content_hash
from .files import module_name, trigger_pattern

MAX_FILES = 8  # more named files than this: the run's own process pool is the better split


class HeadStart:
    def __init__(self, pid: int, fd: int, files: list[str]) -> None:
        self.files = frozenset(files)  # what the child analyzes: absolute paths
        self.pid = pid
        self.fd = fd
        self.answers: dict[str, tuple] | None = None  # absolute path -> (digest, facts only, result)

    @classmethod
    def begin(cls, paths: list[str], config, jobs: int | None) -> HeadStart | None:
        if not hasattr(os, "fork") or not paths or len(paths) > MAX_FILES:
            return None
        if threading.active_count() > 1:  # forking beside other threads may copy a lock held
            return None
        if (jobs or os.cpu_count() or 1) < 2 or not all(os.path.isfile(p) for p in paths):
            return None
        files = sorted({os.path.abspath(p) for p in paths})
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to spare (a limit on processes or memory): the run alone
            os.close(read)
            os.close(write)
            return None
        if pid == 0:  # the child: analyze, send, leave
            os.close(read)
            try:
                try:
                    payload = pickle.dumps(_analyze(files, config), pickle.HIGHEST_PROTOCOL)
                except BaseException:  # the parent analyzes these files itself
                    payload = pickle.dumps(None)
                with os.fdopen(write, "wb") as out:
                    out.write(payload)
            finally:
                os._exit(0)
        os.close(write)
        return cls(pid, read, files)

    def result_for(self, task: tuple):
        """The child's result for an analysis task of the engine's (absolute path, rel, module,
        is_package, digest, stamp, facts only, inherited fields), or None when the run must
        analyze the file itself."""
        absolute, digest, facts_only, inherited = task[0], task[4], task[6], task[7]
        # (another file of the project changed too: no need to wait for the child)
        if inherited or absolute not in self.files or absolute not in self._answers():
            return None
        their_digest, their_facts_only, result = self.answers[absolute]
        return result if (their_digest, their_facts_only) == (digest, facts_only) else None

    def _answers(self) -> dict:
        if self.answers is None:
            try:
                with os.fdopen(self.fd, "rb") as pipe:
                    self.fd = -1
                    self.answers = pickle.loads(pipe.read()) or {}
            except Exception:  # the child died mid-way: nothing usable
                self.answers = {}
            self._reap()
        return self.answers

    def close(self) -> None:
        """Stop the child if its results were never taken; never leave it behind."""
        if self.fd != -1:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.close(self.fd)
            self.fd = -1
        self._reap()

    def _reap(self) -> None:
        if self.pid:
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
            self.pid = 0


def _analyze(files: list[str], config) -> dict[str, tuple]:
    from .worker import analyze_data

    triggers = trigger_pattern(config)
    answers = {}
    for absolute in files:
        if config.host_only(relative_path(absolute, config.root)):
            continue  # never analyzed (engine._lint)
        with open(absolute, "rb") as handle:
            data = handle.read()
        module, is_package = module_name(absolute)
        facts_only = not triggers.search(data)
        answers[absolute] = (content_hash(data), facts_only,
                             analyze_data(data, module, is_package, config, facts_only))
    return answers
