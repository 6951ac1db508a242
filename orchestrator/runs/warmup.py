"""Cold caches, rebuilt on every CPU before a pass.

A run whose `detector.pickle` is missing (a first look, or a cache from an older
version, removed) costs its whole log on the next pass. When several such runs
wait, their first passes run in worker processes, one per CPU, each under its
run's lock, and write their caches; the pass itself then reads those. Workers
are spawned, not forked: the watcher may have delivery threads running.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from pathlib import Path

from orchestrator.buckets import BucketsFile
from orchestrator.infra.errors import UserError
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RecordError

COLD_BYTES = 4 << 20  # a log this long makes a first pass worth a worker


def cold(run_dirs: list[Path]) -> list[Path]:
    """Active runs with no cache and a long log."""
    out = []
    for path in run_dirs:
        rd = RunDir(path)
        if rd.detector_cache.exists():
            continue
        try:
            if rd.events.stat().st_size < COLD_BYTES or not state_file.read(rd).active:
                continue
        except (OSError, UserError, RecordError):
            continue
        out.append(path)
    return out


# runs a worker could not warm, not tried again by this process (the pass reports what is wrong with them)
_FAILED: set[Path] = set()


def warm(run_dirs: list[Path]) -> int:
    """Rebuild the caches of the cold runs among `run_dirs` in parallel; how many were rebuilt."""
    todo = [p for p in cold(run_dirs) if p not in _FAILED]
    jobs = min(len(todo), os.cpu_count() or 1)
    if jobs < 2:
        return 0  # one run: the pass itself is as quick
    with mp.get_context("spawn").Pool(jobs) as pool:
        done = pool.map(_warm_one, [str(p) for p in todo], chunksize=1)
    _FAILED.update(p for p, n in zip(todo, done, strict=True) if n < 0)
    return sum(n for n in done if n > 0)


def _warm_one(path: str) -> int:
    from orchestrator.runs import monitor  # in the worker: the pass's own catch-up, nothing else

    rd = RunDir(Path(path))
    try:
        with state_file.locked(rd):
            record = state_file.read(rd)
            if not record.active or rd.detector_cache.exists():
                return 0
            monitor.catch_up_only(rd, record, BucketsFile())
    except Exception:  # the pass reports what is wrong with this run
        return -1
    return 1
