"""One pass over many runs, split across the CPUs when the process keeps no state between passes.

A warm pass costs a few milliseconds a run (its cached state loaded, the log's new lines,
the verdict, liveness); over a fleet of a hundred long runs that is most of a `status`. A
one-pass process (`status`, `watch --once`: not the watcher, which keeps every run's state
in memory) forks one worker per further CPU; each refreshes its share of the runs under
their own locks, exactly as the pass would, and hands its views back through a pipe. The
notices and traces those views owe are sent from this process (`monitor.deliver`), so a
worker starts no thread and sends nothing.

Forked, not spawned: a new interpreter costs more than the share it would take. Only from a
process running no other thread: a fork copies one thread, and a lock another thread held
would stay held in the child. A worker that fails in any way leaves its share to this
process, which refreshes those runs itself: nothing is lost, the pass is only slower.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.infra.errors import UserError
from orchestrator.notify.channels import Notifier
from orchestrator.runs import monitor
from orchestrator.runs.view import RunView

PARALLEL_AT = 16  # runs in a pass before it is split: below, a fork costs more than it saves
JOBS_ENV = "ORCHESTRATOR_PASS_JOBS"  # processes a one-pass refresh may use (default: the CPUs)


def jobs(runs: int) -> int:
    """How many processes refresh `runs` runs in a one-pass process (1: this one alone)."""
    try:
        wanted = int(os.environ.get(JOBS_ENV) or os.cpu_count() or 1)
    except ValueError:
        wanted = 1
    if runs < PARALLEL_AT or wanted < 2 or monitor.KEPT.keep or threading.active_count() > 1:
        return 1
    return min(wanted, os.cpu_count() or 1, runs // (PARALLEL_AT // 2))


def refresh_each(
    run_dirs: Sequence[Path], buckets: BucketsFile, cfg: UserConfig, notifier: Notifier | None
) -> list[RunView]:
    """Every run refreshed (a run that cannot be looked at shows as broken), in `run_dirs`' order."""
    n = jobs(len(run_dirs))
    if n < 2:
        return [_refresh(d, buckets, cfg, notifier) for d in run_dirs]

    def quiet(d: Path) -> RunView:
        return _refresh(d, buckets, cfg, None, send=False)  # its notices are sent below, from here

    shares = [list(range(k, len(run_dirs), n)) for k in range(n)]  # interleaved: long and short runs mix
    workers = [_fork([run_dirs[i] for i in share], quiet) for share in shares[1:]]
    views: dict[int, RunView] = {i: quiet(run_dirs[i]) for i in shares[0]}
    for share, worker in zip(shares[1:], workers, strict=True):
        got = _collect(worker, len(share))
        for k, i in enumerate(share):
            views[i] = got[k] if got is not None else quiet(run_dirs[i])  # a failed worker's share: done here
    return [monitor.deliver(views[i], cfg, notifier) for i in range(len(run_dirs))]  # notices and traces, as serial


def _refresh(
    run_dir: Path, buckets: BucketsFile, cfg: UserConfig, notifier: Notifier | None, *, send: bool = True
) -> RunView:
    try:
        return monitor.refresh(run_dir, buckets, cfg, notifier=notifier, send=send)
    except Exception as exc:
        return failed(run_dir, exc)


def failed(run_dir: Path, exc: Exception) -> RunView:
    """The row of a run that could not be looked at, saying why (a UserError in its own words)."""
    return monitor.broken(run_dir, str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}")


def _fork(share: list[Path], work: Callable[[Path], RunView]) -> tuple[int, int] | None:
    """A child refreshing `share`, its views pickled into a pipe: (pid, read end), or None if it could not start."""
    try:
        read, write = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return None
    if pid:
        os.close(write)
        return pid, read
    code = 1
    try:  # the child: never returns, never runs the parent's exit handlers
        os.close(read)
        data = pickle.dumps([work(d) for d in share], protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(write, "wb") as out:
            out.write(data)
        code = 0
    except BaseException:  # the parent redoes the share; nothing to say from here
        pass
    finally:
        os._exit(code)


def _collect(worker: tuple[int, int] | None, expect: int) -> list[RunView] | None:
    """A worker's views, or None when it failed (its share is then refreshed by the caller)."""
    if worker is None:
        return None
    pid, read = worker
    with os.fdopen(read, "rb") as fh:
        data = fh.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return None
    try:
        views = pickle.loads(data)
    except Exception:  # a torn hand-over: redone here
        return None
    return views if isinstance(views, list) and len(views) == expect else None
