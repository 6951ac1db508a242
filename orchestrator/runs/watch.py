"""`watch`: the background watcher. Every tick, every active run is evaluated,
liveness enforced, and what is due is sent; between ticks, a run whose log grew is evaluated
within about a second (runs/wake.py). Only one watcher runs at a time.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.infra import atomic, proc
from orchestrator.infra.errors import UserError
from orchestrator.infra.lock import LockBusy, held
from orchestrator.infra.paths import home, runs_dir
from orchestrator.notify.channels import Notifier
from orchestrator.runs import fanout, fleet, monitor, warmup
from orchestrator.runs.view import RunView
from orchestrator.runs.wake import Wake, stamp


@contextmanager
def single_watcher() -> Iterator[None]:
    """Hold the state folder's watcher lock, or say who does: the holder writes its pid into the lock file."""
    root = home()
    pid_file = root / "watch.lock"
    with ExitStack() as stack:
        try:
            root.mkdir(parents=True, exist_ok=True)
            stack.enter_context(held(root / "watch.lock", timeout=0))
        except LockBusy:
            try:
                holder = pid_file.read_text(encoding="utf-8").strip() or "unknown"
            except OSError:
                holder = "unknown"
            raise UserError(f"another watcher is already running (pid {holder}); stop it first or use it") from None
        except OSError as exc:
            raise UserError(f"{root}: cannot use it as the state folder: {exc.strerror}") from None
        try:
            pid_file.write_text(str(os.getpid()), encoding="utf-8")  # in place: the lock is on this very file
        except OSError:
            pass  # a full disk: the lock is held all the same, a second watcher just cannot name us
        yield


BEAT = "watcher.beat"


def one_pass(
    buckets: BucketsFile,
    cfg: UserConfig,
    notifier: Notifier | None = None,
    *,
    warmer: warmup.Warmer | None = None,
    leave_cold: bool = False,
) -> list[RunView]:
    """Every run refreshed. A cold run (a long log, no cache of this version: runs/warmup.py) is rebuilt
    by `warmer` in the background (the watcher), shown meanwhile as last recorded; with `leave_cold`
    (`status`) it is only shown when a watcher is there to rebuild it (one is started if need be); else
    it is rebuilt first, waited for."""
    run_dirs = monitor.list_run_dirs()
    cold = warmup.cold(run_dirs)
    waiting: dict[Path, str] = {}
    if warmer is not None:
        warmer.submit(cold)
        busy = warmer.busy()
        waiting = warmup.evaluating([p for p in cold if p in busy])
    elif leave_cold and cold and (watcher_running() or ensure_watcher(cfg) is not None):
        waiting = warmup.evaluating(cold)
    else:
        warmup.warm(cold)  # several first passes waiting: on every CPU, before the pass
    todo = [d for d in run_dirs if d not in waiting]
    refreshed = iter(fanout.refresh_each(todo, buckets, cfg, notifier))  # a one-pass process: split across the CPUs
    views = [warmup.as_recorded(d, buckets, waiting[d]) if d in waiting else next(refreshed) for d in run_dirs]
    if any(v.record.queued for v in views):
        from orchestrator.runs.launch import start_run  # launch.py starts a watcher: imported here, not at the top

        try:  # queued runs start as slots free: every pass, so the queue outlives any process
            started = set(fleet.admit(cfg, start_run))
        except LockBusy:
            started = set()  # another process is admitting right now; the next pass looks again
        places = fleet.queue_positions()
        for i, v in enumerate(views):
            if v.run_dir in started:  # shown as it is now: launching or running
                views[i] = v = monitor.refresh(v.run_dir, buckets, cfg, notifier=notifier)
            v.queue_position = places.get(v.run_id)
    return views


def watch(
    buckets: BucketsFile,
    cfg: UserConfig,
    *,
    once: bool,
    tick_s: float,
    report: Callable[[list[RunView]], None],
    notifier: Notifier | None = None,
    idle_exit_s: float | None = None,
    wake: bool = True,
) -> None:
    """Pass over every run each tick; with `idle_exit_s`, stop once no run has been active that long.
    With `wake`, a live run whose files change between ticks is refreshed then (runs/wake.py)."""
    with single_watcher():
        monitor.KEPT.keep = True  # a long-lived process: each run's state stays in memory between ticks
        waker = Wake(runs_dir()) if wake else None
        warmer = None if once else warmup.Warmer()  # (one pass: it waits for its rebuilds, as `status` does)
        try:
            last_active = time.monotonic()
            seen = _config_stamp(cfg)
            passes = 0
            live: list[Path] = []
            while True:
                started = time.monotonic()
                before = {d: stamp(d) for d in live} if waker is not None else {}  # (see Wake.watch)
                if _config_stamp(cfg) != seen:  # config.yaml changed: the caps, ceilings, targets it says now
                    seen = _config_stamp(cfg)
                    cfg, notifier = _reloaded(cfg, notifier)
                views = one_pass(buckets, cfg, notifier, warmer=warmer)
                monitor.forget_ended(views)
                report(views)
                passes += 1
                _beat(passes)
                if once:
                    return
                if any(
                    v.record.active or v.record.queued or v.evaluating or v.error or _owes(v, notifier) for v in views
                ):
                    last_active = time.monotonic()
                elif idle_exit_s is not None and time.monotonic() - last_active >= idle_exit_s:
                    return
                if waker is None or warmer is None:
                    time.sleep(max(0.0, tick_s - (time.monotonic() - started)))
                else:
                    live = [v.run_dir for v in views if v.record.active or v.record.queued]
                    waker.watch(live, [v.run_dir for v in views], before)
                    look = _refresher(buckets, cfg, notifier, report)
                    _between_ticks(waker, views, started + tick_s, look, warmer)
        finally:
            if warmer is not None:
                warmer.close()  # a rebuild cut short is done again by the next pass (its cache is not written)
            monitor.KEPT.flush()  # what the last ticks learnt, for the next reader


def _refresher(
    buckets: BucketsFile, cfg: UserConfig, notifier: Notifier | None, report: Callable[[list[RunView]], None]
) -> Callable[[list[Path]], None]:
    """Refresh some runs as the pass would, and report what that did."""
    return lambda run_dirs: report(fanout.refresh_each(run_dirs, buckets, cfg, notifier))


def _between_ticks(
    waker: Wake, views: list[RunView], until: float, look: Callable[[list[Path]], None], warmer: warmup.Warmer
) -> None:
    """Until the next tick (`until`, monotonic): refresh each watched run whose files changed, as they
    change; return early when a new run appears, or a cold run's rebuilt cache is in, so a whole pass
    takes it in. A run still being rebuilt is left to its worker."""
    rebuilding = {v.run_dir for v in views if v.evaluating}
    while True:
        left = until - time.monotonic()
        if left <= 0:
            return
        moved, new = waker.wait(min(left, 1.0) if rebuilding else left)
        if rebuilding and not rebuilding <= warmer.busy():
            return  # a rebuild finished: a pass now shows that run evaluated
        todo = [d for d in moved if d not in rebuilding]
        if todo:
            look(todo)
        waker.absorb(moved)
        if new:
            return


def _owes(view: RunView, notifier: Notifier | None) -> bool:
    """A notice of this run is still to be sent (waiting to retry, or in flight): the watcher stays for it,
    as no other process would retry it."""
    from orchestrator.notify import delivery
    from orchestrator.runs.pipeline import NOTICES

    return notifier is not None and notifier.configured and bool(delivery.due(view.record, notifier, NOTICES))


def _config_stamp(cfg: UserConfig) -> tuple[int, int] | None:
    try:
        st = cfg.path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _reloaded(cfg: UserConfig, notifier: Notifier | None) -> tuple[UserConfig, Notifier | None]:
    """config.yaml read again; a version that does not load keeps the last good one, and says why."""
    from orchestrator.config import load
    from orchestrator.notify.channels import check_targets, from_config
    from orchestrator.runs.pipeline import NOTICES

    try:
        if not cfg.path.is_file() or cfg.path.stat().st_size == 0:  # mid-save (an editor truncates, then writes)
            raise UserError(f"{cfg.path} is missing or empty (restart the watcher for the defaults)")
        new = load(cfg.path)
        if notifier is None:
            return new, None
        targets = from_config(new, NOTICES)
        check_targets(targets, new)
        return new, targets
    except UserError as exc:
        sys.stderr.write(f"watch: config.yaml not reloaded, keeping the last good one: {exc}\n")
        return cfg, notifier


def _beat(passes: int) -> None:
    """`watcher.beat` in the state folder: this watcher's pid and how many full passes it made, and when
    the last one ended. A script (or a test) that must let the watcher look a few more times waits on
    it rather than on the clock. Not durable: a lost beat is the next pass's to write."""
    beat = {"pid": os.getpid(), "passes": passes, "at": round(time.time(), 3)}
    try:
        atomic.write_bytes_atomic(home() / BEAT, json.dumps(beat).encode(), durable=False)
    except OSError:
        pass  # a full or read-only state folder: never a reason to stop watching


def watcher_running() -> bool:
    """Whether some process holds the state folder's watcher lock right now."""
    root = home()
    try:
        with held(root / "watch.lock", timeout=0):
            return False
    except LockBusy:
        return True
    except OSError:
        return False


def ensure_watcher(cfg: UserConfig) -> int | None:
    """Start a detached watcher unless one runs (or autostart is off); its pid, or None."""
    if not cfg.autostart_watcher or watcher_running():
        return None
    root = home()
    argv = [
        sys.executable,
        "-m",
        "orchestrator",
        "watch",
        "--tick",
        repr(cfg.watcher_tick_s),
        "--idle-exit",
        repr(cfg.watcher_idle_s),
    ]
    # a second watcher started in a race exits at once ("another watcher is already running")
    return proc.spawn_detached(argv, cwd=root, log=root / "watch.log")
