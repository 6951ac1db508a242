"""Cold caches, rebuilt in worker processes.

A live run whose `detector.pickle` is missing or of another version (a first look, an
upgrade) costs its whole log on the next pass: minutes for a long run. Such a run is
`cold` when its log is long (COLD_BYTES). Its first pass runs in a worker process, under
its run's lock, and writes its cache; the pass then reads that. Workers are spawned, not
forked: the watcher may have delivery threads running.

- `warm`: a one-pass process (`watch --once`, or `status` with no watcher to leave it to)
  rebuilds the cold runs on every CPU before its pass, and waits.
- `Warmer`: the watcher rebuilds them in the background, newest run first, one worker per
  CPU, while its passes and wakes go on for every other run; a run being rebuilt is shown
  as it was last recorded, `evaluating (N of M runs)`, and looked at again once its cache
  is written. `status` never waits for one (orchestrator/runs/watch.py).
"""

from __future__ import annotations

import multiprocessing as mp
import os
from multiprocessing.pool import AsyncResult, Pool
from pathlib import Path

from orchestrator.buckets import BucketsFile
from orchestrator.infra.errors import UserError
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RecordError, RunRecord
from orchestrator.runs import evaluator
from orchestrator.runs.view import RunView

COLD_BYTES = 4 << 20  # a log this long makes a first pass worth a worker


def cold(run_dirs: list[Path]) -> list[Path]:
    """Active runs with a long log and no cache of this version, the newest run first."""
    found: list[tuple[str, Path]] = []
    for path in run_dirs:
        rd = RunDir(path)
        try:
            if rd.events.stat().st_size < COLD_BYTES or evaluator.current(rd.detector_cache):
                continue
            record = state_file.read(rd)
        except (OSError, UserError, RecordError):
            continue
        if record.active or unaccounted(record):
            found.append((record.started_at or "", path))
    found.sort(key=lambda t: (t[0], t[1].name), reverse=True)
    return [p for _, p in found]


def as_recorded(run_dir: Path, buckets: BucketsFile, evaluating: str) -> RunView:
    """A run as its state.json last said, no lock taken, nothing evaluated: its cache is being rebuilt,
    and neither `status` nor the watcher's pass waits for that."""
    from orchestrator.runs import fanout, monitor

    try:
        view = monitor.view_as_recorded(RunDir(run_dir), buckets)
    except Exception as exc:
        return fanout.failed(run_dir, exc)
    view.evaluating = evaluating
    return view


def unaccounted(record: RunRecord) -> bool:
    """An ended run whose whole log the pass has yet to account (its spend, its last verdict)."""
    return not record.active and record.spend is None and bool(record.format)


def evaluating(cold_runs: list[Path]) -> dict[Path, str]:
    """What `status` shows of each cold run: its place among them, `N of M runs`."""
    return {p: f"{i} of {len(cold_runs)} runs" for i, p in enumerate(cold_runs, 1)}


class Warmer:
    """The watcher's background rebuilds: a pool of spawned workers, started when first needed."""

    def __init__(self, jobs: int | None = None) -> None:
        self.jobs = max(1, jobs or os.cpu_count() or 1)
        self._pool: Pool | None = None
        self._busy: dict[Path, AsyncResult[int]] = {}

    def submit(self, cold_runs: list[Path]) -> None:
        """Queue the rebuild of each cold run not queued yet (in the order given: the newest first)."""
        for path in cold_runs:
            if path in self._busy or path in _FAILED:
                continue
            if self._pool is None:
                self._pool = mp.get_context("spawn").Pool(self.jobs)
            self._busy[path] = self._pool.apply_async(_warm_one, (str(path),))

    def busy(self) -> set[Path]:
        """The runs queued or being rebuilt; the finished ones are taken off (and a failed one noted)."""
        for path, job in list(self._busy.items()):
            if job.ready():
                del self._busy[path]
                try:
                    if job.get() <= 0:  # failed, or left to the pass (guidance to take first): not tried again
                        _FAILED.add(path)
                except Exception:  # a worker that died: the pass looks at the run itself, and says what is wrong
                    _FAILED.add(path)
        if not self._busy:
            self.close()  # no worker idles in the watcher's memory: the next cold run starts a pool again
        return set(self._busy)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None
        self._busy.clear()


# runs a worker could not warm (or left to the pass), not tried again by this process (the pass reports what
# is wrong with them)
_FAILED: set[Path] = set()


def warm(cold_runs: list[Path]) -> int:
    """Rebuild the caches of `cold_runs` (`cold`'s answer) in parallel; how many were rebuilt."""
    todo = [p for p in cold_runs if p not in _FAILED]
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
            if not (record.active or unaccounted(record)) or evaluator.current(rd.detector_cache):
                return 0
            monitor.catch_up_only(rd, record, BucketsFile())
    except Exception:  # the pass reports what is wrong with this run
        return -1
    return 1
