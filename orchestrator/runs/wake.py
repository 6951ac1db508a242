"""Between the watcher's ticks: wake when a live run's files change, so a trip is evaluated (and
paged) about a second after the line that made it, not at the next tick (issue 37).

What wakes the watcher:
- a watched run's event log or workspace snapshots grew, or its `state.json` was rewritten (its
  supervisor recorded an ending, `kill` or `nudge` wrote it): that run is refreshed alone;
- a new run appeared under `runs/` (launched while the watcher waited): a whole pass follows.

It polls a few `stat` calls a run every quarter second: cheap (50 runs are 200 stats a poll),
right on every filesystem (inotify misses writes over NFS and in some containers), and nothing new
to install. A burst of lines (a call and its result) is taken as one: the wait returns once the
files have been still for `SETTLE_S`, or after `MAX_SETTLE_S` of steady writing. Successive wakes
are at least `GAP_S` apart, so a chatty agent costs at most a few refreshes a second. The tick
stays as the floor: liveness (a silent agent, the stuck band) is checked at every tick whatever
the files do.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from orchestrator.record.layout import RunDir
from spiral.walk import WAKE_GAP_S as GAP_S
from spiral.walk import WAKE_MAX_SETTLE_S as MAX_SETTLE_S
from spiral.walk import WAKE_SETTLE_S as SETTLE_S

POLL_S = 0.25
# SETTLE_S, MAX_SETTLE_S, GAP_S: one truth with replay, which walks a recording as this watcher wakes

Stamp = tuple[int, ...]


def stamp(run_dir: Path) -> Stamp:
    """The sizes and change times of the files a run's evaluation reads (-1 for one not there)."""
    rd = RunDir.of(run_dir)
    out: list[int] = []
    for path in (rd.events, rd.workspace, rd.state_json):
        try:
            st = os.stat(path)
        except OSError:
            out += [-1, -1]
            continue
        out += [st.st_size, st.st_mtime_ns]
    return tuple(out)


def _mtime(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def _names(root: Path) -> set[str]:
    try:
        return {e.name for e in os.scandir(root)}
    except OSError:
        return set()


class Wake:
    """The files of the watched runs as last seen, and the runs folder's entries."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._stamps: dict[Path, Stamp] = {}
        self._root_mtime = -1
        self._known: set[str] = set()
        self._pending: set[str] = set()  # new folders whose state.json is not written yet
        self._last_wake = 0.0

    def watch(self, run_dirs: Iterable[Path], known: Iterable[Path], before: dict[Path, Stamp] | None = None) -> None:
        """Watch `run_dirs`; `known` are every run a pass has seen (a new one wakes a pass). `before`: the
        runs' files as they were when the pass began, so what a run wrote during the pass (after the
        pass looked at it) still wakes the watcher; a run not in it is taken as it is now."""
        before = before or {}
        self._stamps = {d: before.get(d) or stamp(d) for d in run_dirs}
        self._root_mtime = _mtime(self.root)
        self._known = {d.name for d in known}
        self._pending = set()

    def absorb(self, run_dirs: Iterable[Path]) -> None:
        """Take the runs' files as they are now: the watcher's own writes do not wake it again."""
        for d in run_dirs:
            if d in self._stamps:
                self._stamps[d] = stamp(d)

    def changed(self) -> tuple[list[Path], bool]:
        """The watched runs whose files changed since they were last taken, and whether a new run
        appeared (its state.json written)."""
        moved = [d for d, was in self._stamps.items() if stamp(d) != was]
        return moved, self._new_run()

    def _new_run(self) -> bool:
        now = _mtime(self.root)
        if now != self._root_mtime:
            self._root_mtime = now
            self._pending |= _names(self.root) - self._known
        if not self._pending:
            return False
        ready = {n for n in self._pending if RunDir(self.root / n).is_run()}
        gone = {n for n in self._pending - ready if not os.path.isdir(os.path.join(self.root, n))}
        self._pending -= ready | gone
        self._known |= ready
        return bool(ready)

    def wait(self, timeout: float) -> tuple[list[Path], bool]:
        """Block until a watched run changed or a new run appeared (then return as `changed` does,
        once the files are still), or `timeout` seconds passed (then `([], False)`)."""
        start = time.monotonic()
        deadline = start + max(0.0, timeout)
        early = self._last_wake + GAP_S
        if early > start:
            time.sleep(min(early, deadline) - start)
        while True:
            moved, new = self.changed()
            if moved or new:
                return self._settled(moved, new, deadline)
            left = deadline - time.monotonic()
            if left <= 0:
                return [], False
            time.sleep(min(POLL_S, left))

    def _settled(self, moved: list[Path], new: bool, deadline: float) -> tuple[list[Path], bool]:
        """Wait out a burst of writes (bounded), then take every run that changed meanwhile."""
        began = time.monotonic()
        seen = {d: stamp(d) for d in moved}
        while time.monotonic() - began < MAX_SETTLE_S and time.monotonic() < deadline:
            time.sleep(SETTLE_S)
            now = {d: stamp(d) for d in seen}
            if now == seen:
                break
            seen = now
        more, later = self.changed()
        self._last_wake = time.monotonic()
        return sorted(set(moved) | set(more)), new or later
