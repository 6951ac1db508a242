"""The queue: runs wait in state `queued` until a slot under the concurrency cap frees.

config.yaml `max_parallel` (and `max_parallel_per_repo`) caps the runs that are launching or running
at once; `stagger_seconds` spaces two starts. `admit` is the one place a queued run starts: `launch`
calls it for the runs it just queued, and every pass of the watcher (and `status`) calls it, so a
queue outlives any process. The decision is taken under the state folder's fleet lock, and each run
moves from `queued` to `launching` under its own lock, so two admitters never start one run twice
or go past the cap. A run admitted by a process that died before its agent started goes back to the
queue (monitor.py, liveness), so a ticket runs exactly once.
"""

from __future__ import annotations

import os
import re
import shutil
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.config import UserConfig
from orchestrator.infra import proc
from orchestrator.infra.lock import held
from orchestrator.infra.paths import home, runs_dir
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import QUEUED, RunRecord
from spiral.timestamps import parse_ts

LOCK_WAIT_S = 30.0


@dataclass(frozen=True)
class Seat:
    """What the cap sees of a run."""

    run_id: str
    state: str
    repo: str | None
    queued_at: float
    started_at: float | None
    cost_usd: float | None = None  # what it has spent (the ledger's figure; live runs: as last written)
    held: str | None = None
    uncounted: bool = False  # it ended and no pass has added up its spend yet


def _seats() -> list[tuple[RunDir, Seat]]:
    root = runs_dir()
    if not root.is_dir():
        return []
    out = []
    for name in sorted(e.name for e in os.scandir(root)):
        rd = RunDir(root / name)
        try:
            r = state_file.read_shared(rd)  # only read: a long-lived reader (serve) reads what changed
        except Exception:
            continue  # an unreadable record holds no seat; status shows it
        queued = parse_ts(r.queued_at) or parse_ts(r.created_at) or 0.0
        started = parse_ts(r.started_at) if r.state != QUEUED else None
        spend = r.spend or r.ceilings.live
        cost = spend.cost_usd if spend is not None else None
        uncounted = r.ended and r.spend is None and bool(r.format) and r.spawned_at is not None
        out.append((rd, Seat(r.run_id, r.state, r.repo, queued, started, cost, r.held, uncounted)))
    return out


def queue_order(seats: list[Seat]) -> list[Seat]:
    """Queued runs, first come first served (ties by run id)."""
    return sorted((s for s in seats if s.state == QUEUED), key=lambda s: (s.queued_at, s.run_id))


def spent_today(seats: list[Seat], now: float) -> float:
    """Dollars spent by the runs started today (UTC), as far as their records say."""
    day = time.strftime("%Y-%m-%d", time.gmtime(now))
    return sum(
        s.cost_usd or 0.0
        for s in seats
        if s.started_at is not None and time.strftime("%Y-%m-%d", time.gmtime(s.started_at)) == day
    )


def _uncounted_today(seats: list[Seat], now: float) -> bool:
    day = time.strftime("%Y-%m-%d", time.gmtime(now))
    return any(
        s.uncounted and s.started_at and time.strftime("%Y-%m-%d", time.gmtime(s.started_at)) == day for s in seats
    )


def held_by_ceiling(seats: list[Seat], cfg: UserConfig, now: float) -> str | None:
    """Why the daily ceiling holds the queue now (None: it does not)."""
    if cfg.daily_max_usd is None:
        return None
    spent = spent_today(seats, now)
    if spent < cfg.daily_max_usd:
        return None
    return f"the daily spend ceiling is reached (${spent:.2f} of ${cfg.daily_max_usd:.2f} today, UTC)"


def choose(seats: list[Seat], cfg: UserConfig, now: float) -> list[str]:
    """Which queued runs may start now (pure): under the caps and the daily ceiling, one per stagger period."""
    active = [s for s in seats if s.state in ("launching", "running")]
    waiting = queue_order(seats)
    if not waiting or held_by_ceiling(seats, cfg, now) is not None:
        return []
    if cfg.daily_max_usd is not None and _uncounted_today(seats, now):
        return []  # a run just ended and its spend is not added up yet: the next pass counts it, then decides
    if cfg.stagger_s > 0:
        last = max((s.started_at for s in seats if s.started_at is not None), default=None)
        if last is not None and now - last < cfg.stagger_s:
            return []
    chosen: list[str] = []
    for s in waiting:
        if cfg.max_parallel is not None and len(active) >= cfg.max_parallel:
            break
        if cfg.max_parallel_per_repo is not None:
            same = sum(1 for a in active if same_repo(a.repo, s.repo))
            if same >= cfg.max_parallel_per_repo:
                continue  # this repo is full; a run on another repo may still start
        chosen.append(s.run_id)
        active.append(s)
        if cfg.stagger_s > 0:
            break
    return chosen


_URL = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*)://(?:[^@/]*@)?(?P<host>[^/]*)(?P<path>.*)$", re.I)
_SCP = re.compile(r"^(?:[^@/:]*@)?(?P<host>[^/:]+):(?P<path>.*)$")


def repo_key(repo: str) -> str:
    """One spelling per repository for `max_parallel_per_repo` (pure): `file:///r`, `/r/` and `/r` are one
    repo; so are `https://host/a/b.git`, `ssh://git@host/a/b` and `git@host:a/b`. A local path keeps a
    trailing `.git` (a bare `r.git` beside a `r` work tree is another repo); a server's does not."""
    if m := _URL.match(repo):
        if m["scheme"].lower() == "file":
            return _local_key(urllib.parse.unquote(m["path"]))
        host = m["host"].lower()
        if m["scheme"].lower() in ("ssh", "git+ssh"):
            host = re.sub(r":\d+$", "", host)  # the port ([::1] keeps its colons)
        return f"{host}/{_server_path(m['path'])}"
    if m := _SCP.match(repo):
        return f"{m['host'].lower()}/{_server_path(m['path'])}"
    return _local_key(repo)


def _local_key(path: str) -> str:
    return os.path.normpath(path) if path else path


def _server_path(path: str) -> str:
    path = path.strip("/")
    return path.removesuffix(".git").rstrip("/")


def same_repo(a: str | None, b: str | None) -> bool:
    return a == b if a is None or b is None else repo_key(a) == repo_key(b)


def positions(seats: list[Seat]) -> dict[str, int]:
    return {s.run_id: i for i, s in enumerate(queue_order(seats), 1)}


def queue_positions() -> dict[str, int]:
    """Each queued run's place in the queue (1: next to start)."""
    return positions([s for _, s in _seats()])


def _take(by: str) -> Callable[[RunRecord], bool]:
    me = proc.ProcRef.of(os.getpid())

    def change(r: RunRecord) -> bool:
        if r.state != QUEUED or r.stop_requested is not None:
            return False
        r.state, r.launcher, r.admitted_by, r.held = "launching", me, by, None
        r.admission += 1
        r.started_at = state_file.utcnow()
        return True

    return change


def admit(
    cfg: UserConfig, start: Callable[[Path], None], own: frozenset[str] = frozenset(), now: float | None = None
) -> list[Path]:
    """Start the queued runs that fit now; `start(run_dir)` clones and spawns one (runs/launch.py).

    `own`: the runs the calling `launch` queued itself (interrupted, they end `lost` as a launch always
    did); any other run it starts is the queue's, and goes back to the queue if its admitter dies."""
    now = time.time() if now is None else now
    root = home()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return []
    started = []
    with held(root / "fleet.lock", timeout=LOCK_WAIT_S):
        pairs = _seats()
        _mark_held(pairs, held_by_ceiling([s for _, s in pairs], cfg, now))
        by_id = {s.run_id: rd for rd, s in pairs}
        for run_id in choose([s for _, s in pairs], cfg, now):
            rd = by_id[run_id]
            by = "launch" if run_id in own else "queue"
            record = state_file.update(rd, _take(by))
            if record.state == "launching" and record.admitted_by == by and record.spawned_at is None:
                started.append(rd.path)
    for path in started:
        start(path)
    return started


def _mark_held(pairs: list[tuple[RunDir, Seat]], why: str | None) -> None:
    """Say on the next queued run why the queue waits (its notice goes out once a day), or clear it."""
    order = queue_order([s for _, s in pairs])
    head = order[0].run_id if order and why is not None else None
    for rd, s in pairs:
        want = why if s.run_id == head else None
        if s.state == QUEUED and s.held != want:

            def change(r: RunRecord, want: str | None = want) -> bool:
                if r.state != QUEUED:
                    return False
                r.held = want
                r.held_since = state_file.utcnow() if want is not None else None
                return True

            state_file.update(rd, change)


def requeue(rd: RunDir, reason: str, admission: int) -> RunRecord:
    """An admitted run whose admitter died before the agent started: back to the queue, clone removed.
    `admission`: the start judged dead; a newer one (another pass requeued and restarted it) is left alone."""

    def change(r: RunRecord) -> bool:
        if r.state != "launching" or r.supervisor is not None or r.agent_pid is not None or r.stop_requested:
            return False  # a supervisor took it (or a stop came): not ours to start again
        if r.admission != admission:
            return False  # judged on an older start: this one is somebody's live attempt
        r.state, r.launcher, r.admitted_by, r.started_at, r.spawned_at = QUEUED, None, None, None, None
        r.requeued += 1
        r.reason = reason
        return True

    record = state_file.update(rd, change)
    if record.state == QUEUED and record.admission == admission:
        shutil.rmtree(rd.clone, ignore_errors=True)  # the next start clones afresh, into its own folder
    return record


def most_at_once(records: Iterable[Mapping[str, Any]]) -> int:
    """The most runs between their `spawned_at` and `ended_at` at one instant (state.json records; an end at
    the instant another starts frees its slot first), as the fleet bench and its tests check the cap."""
    edges: list[tuple[float, int]] = []
    for r in records:
        start, end = parse_ts(r.get("spawned_at")), parse_ts(r.get("ended_at"))
        if start is not None and end is not None:
            edges += [(start, 1), (end, -1)]
    now = peak = 0
    for _, step in sorted(edges):
        now += step
        peak = max(peak, now)
    return peak
