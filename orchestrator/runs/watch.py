"""`watch`: the background watcher. Every tick, every active run is evaluated,
liveness enforced, and what is due is sent. Only one watcher runs at a time.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.infra.errors import UserError
from orchestrator.infra.paths import home
from orchestrator.notify.channels import Notifier
from orchestrator.runs import monitor


@contextmanager
def single_watcher() -> Iterator[None]:
    root = home()
    root.mkdir(parents=True, exist_ok=True)
    path = root / "watch.lock"
    fh = path.open("a+")
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = fh.read().strip() or "unknown"
        fh.close()
        raise UserError(f"another watcher is already running (pid {holder}); stop it first or use it") from None
    try:
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        yield
    finally:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
        fh.close()


def one_pass(buckets: BucketsFile, cfg: UserConfig, notifier: Notifier | None = None) -> list[monitor.RunView]:
    views = []
    for run_dir in monitor.list_run_dirs():
        try:
            views.append(monitor.refresh(run_dir, buckets, cfg, notifier=notifier))
        except Exception as exc:
            detail = str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
            views.append(monitor.broken(run_dir, detail))
    return views


def watch(
    buckets: BucketsFile,
    cfg: UserConfig,
    *,
    once: bool,
    tick_s: float,
    report: Callable[[list[monitor.RunView]], None],
    notifier: Notifier | None = None,
) -> None:
    with single_watcher():
        while True:
            started = time.monotonic()
            report(one_pass(buckets, cfg, notifier))
            if once:
                return
            time.sleep(max(0.0, tick_s - (time.monotonic() - started)))
