"""Running a lint run's per-file analyses: in this process, in a fork pool, or taken from the
head start that analyzed a few named files early (head_start.py). Each task is the engine's
(absolute path, rel, module, is_package, digest, stamp, facts only, inherited fields)."""

from __future__ import annotations

import gc
import importlib
import os

from .collector import paused_then_frozen
from .pool_worker import COLLECT_EVERY, analyze_in_worker, init_worker
from .records import diagnostic
from .worker import RawResult, analyze_file

PROGRESS_MIN_FILES = 50  # fewer files than this finish before a bar is worth drawing


def analyzed(todo, config, jobs: int | None, progress, head):
    """`analyze_all`, with the results a head start already has for some of the tasks."""
    ready = []
    if head is not None and todo:
        ready = [(task, result) for task in todo if (result := head.result_for(task)) is not None]
        done = {id(task) for task, _ in ready}
        todo = [task for task in todo if id(task) not in done]
    yield from ready
    yield from analyze_all(todo, config, jobs, progress)


def analyze_all(todo, config, jobs: int | None, progress):
    """Yield ((task), RawResult) for each file, in parallel when there is more than one file."""
    if not todo:
        return
    if progress is not None and len(todo) >= PROGRESS_MIN_FILES:
        progress.start(len(todo))
    jobs = jobs or os.cpu_count() or 1
    if len(todo) == 1 or jobs == 1:
        for done, task in enumerate(todo):
            if done and done % COLLECT_EVERY == 0:
                # the results kept so far (hundreds of MB on a whole tree) would be scanned
                # again by every full collection: the last files' cyclic garbage is collected,
                # and what is left, the results, frozen (as a pool worker does with its start)
                gc.collect()
                gc.freeze()
            yield task, analyze_file(task[0], task[2], task[3], config, task[6], task[7])
            if progress is not None:
                progress.advance(1)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    importlib.import_module("libcst")  # before forking, so every worker starts with it loaded

    # biggest files first, so no worker is left with a long file at the end
    ordered = sorted(todo, key=lambda t: -_size(t[0]))
    context = multiprocessing.get_context("fork") if hasattr(os, "fork") else None
    with ProcessPoolExecutor(max_workers=min(jobs, len(ordered)), mp_context=context,
                             initializer=init_worker) as pool:
        futures = {pool.submit(analyze_in_worker, t[0], t[2], t[3], config, t[6], t[7]): t for t in ordered}
        with paused_then_frozen():  # the results live through the run: never scanned (collector.py)
            for future in as_completed(futures):
                task = futures[future]
                try:
                    result = future.result()
                except Exception as error:  # a worker died (e.g. out of memory): report, go on
                    result = RawResult(findings=[diagnostic("SYN003", f"internal error: worker failed: {error!r}")],
                                       internal_error=repr(error))
                if progress is not None:
                    progress.advance(1)
                yield task, result


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
