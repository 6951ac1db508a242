"""The one file lock (filelock's flock-based lock): state folders, run records, the watcher, the ledger."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class LockBusy(Exception):
    """The lock was held by someone else for longer than the caller would wait."""


@contextmanager
def held(path: Path, *, timeout: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing); wait up to `timeout` s, forever if None.

    The lock file is kept on release: unlinking it would let a waiter that
    opened the old file and a newcomer that created a new one both "hold" it.
    """
    from filelock import FileLock, Timeout  # ~20 ms to import: only once a lock is really taken

    lock = FileLock(path, timeout=-1 if timeout is None else timeout, thread_local=False, preserve_lock_file=True)
    try:
        lock.acquire()
    except Timeout:
        raise LockBusy(str(path)) from None
    try:
        yield
    finally:
        lock.release()
