"""state.json: a run's record, read and written atomically under the run's lock.

Several processes touch a run (its supervisor, `status`, `watch`, `kill`);
every read-modify-write holds the run's lock file and re-reads inside it.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path

import orjson

from orchestrator.infra.atomic import write_text_atomic
from orchestrator.infra.errors import UserError
from orchestrator.infra.lock import held
from orchestrator.infra.redaction import redact
from orchestrator.record.layout import RunDir
from orchestrator.record.model import ACTIVE, ENDED, VERSION, RecordError, RunRecord, from_builtins, to_builtins

__all__ = [
    "ACTIVE",
    "ENDED",
    "StateError",
    "end",
    "holding",
    "locked",
    "read",
    "read_shared",
    "reserve",
    "update",
    "utcnow",
    "write",
]

# space set aside in each run folder, given up to record the run's ending once the disk is full
RESERVE = ".disk-reserve"
RESERVE_BYTES = 128 * 1024
FULL = (errno.ENOSPC, errno.EDQUOT)


class StateError(UserError):
    """The run's state could not be read, locked or written (a full or read-only disk): one line."""

    def __init__(self, path: Path, doing: str, exc: OSError) -> None:
        super().__init__(f"{path}: cannot {doing}: {exc.strerror or exc}")
        self.errno = exc.errno

    @property
    def disk_full(self) -> bool:
        return self.errno in FULL


def utcnow() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@contextmanager
def locked(run: RunDir | Path) -> Iterator[None]:
    rd = RunDir.of(run)
    with ExitStack() as stack:
        try:
            stack.enter_context(held(rd.lock))
        except OSError as exc:
            raise StateError(rd.lock, "lock the run", exc) from None
        yield


@contextmanager
def holding(run: RunDir | Path) -> Iterator[tuple[RunDir, RunRecord]]:
    """The run's folder and its record, read under the run's lock, held while the block runs (a
    watcher pass: one call into the record for the lock and the read)."""
    rd = RunDir.of(run)
    with locked(rd):
        yield rd, read(rd)


def read(run: RunDir | Path) -> RunRecord:
    rd = RunDir.of(run)
    data = _opened(rd, None)[1]
    assert data is not None  # (nothing known: always read)
    return _record(rd, data)


def _opened(rd: RunDir, known: tuple[tuple[int, ...], RunRecord, float] | None) -> tuple[tuple[int, ...], bytes | None]:
    """(state.json's identity, its bytes, or None when `known` was read from this same file and is
    trusted). Opened without blocking (a FIFO put in its place must not hold a pass for ever), and only
    a regular file is read."""
    try:
        fd = os.open(rd.state_json, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise UserError(f"{rd.run_id}: no state.json in {rd.path}") from None
    except OSError as exc:
        raise StateError(rd.state_json, "read the run's state", exc) from None
    try:
        st = os.fstat(fd)
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size)
        # a record is trusted by its identity only once its mtime is well before it was read: a file
        # system that keeps whole seconds gives two writes within one the same mtime (git's "racily clean")
        if known is not None and known[0] == key and known[2] - st.st_mtime > RACY_S:
            return key, None
        if not stat.S_ISREG(st.st_mode):
            raise UserError(f"{rd.state_json}: state file is not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            return key, f.read()
    except OSError as exc:
        raise StateError(rd.state_json, "read the run's state", exc) from None
    finally:
        os.close(fd)


def _record(rd: RunDir, data: bytes) -> RunRecord:
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:  # what orjson refuses and json reads (NaN, a lone surrogate, a huge int)
        try:
            raw = json.loads(data.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise UserError(f"{rd.state_json}: state file is not valid JSON") from None
    try:
        return from_builtins(raw, rd.run_id)
    except RecordError as exc:
        raise UserError(f"{rd.state_json}: {exc}") from None


# state.json path -> (its identity when read, the record, when it was read): see read_shared
_SHARED: dict[str, tuple[tuple[int, ...], RunRecord, float]] = {}
_SHARED_CAP = 50_000
RACY_S = 2.0


def read_shared(run: RunDir | Path) -> RunRecord:
    """The record as `read` gives it, read again only when state.json changed: writes are atomic
    renames, so a new record is a new inode (and a new mtime). The record is shared between calls:
    a caller must not change it (`read` gives a private copy to change and write back)."""
    rd = RunDir.of(run)
    path = str(rd.state_json)
    known = _SHARED.get(path)
    now = time.time()
    key, data = _opened(rd, known)
    if data is None and known is not None:
        return known[1]
    assert data is not None
    record = _record(rd, data)
    if len(_SHARED) >= _SHARED_CAP:
        _SHARED.clear()
    _SHARED[path] = (key, record, now)
    return record


def write(run: RunDir | Path, record: RunRecord) -> None:
    record.version = VERSION
    record.updated_at = utcnow()
    text = json.dumps(to_builtins(record), indent=2, sort_keys=True) + "\n"
    rd = RunDir.of(run)
    try:
        try:
            write_text_atomic(rd.state_json, text)
        except OSError as exc:
            # the disk is full: the reserve makes room to record how the run ended (only that)
            if exc.errno not in FULL or not record.ended or not _release(rd):
                raise
            write_text_atomic(rd.state_json, text)
    except OSError as exc:
        raise StateError(rd.state_json, "write the run's state", exc) from None


def reserve(run: RunDir | Path) -> None:
    """Set space aside in the run folder for recording its state on a full disk (best effort)."""
    path = RunDir.of(run).path / RESERVE
    try:
        with path.open("wb") as fh:
            fh.write(b"\0" * RESERVE_BYTES)  # real blocks, not a sparse file
    except OSError:
        _unlink(path)


def _release(rd: RunDir) -> bool:
    return _unlink(rd.path / RESERVE)


def _unlink(path: Path) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False


def update(run: RunDir | Path, change: Callable[[RunRecord], bool | None]) -> RunRecord:
    """Apply `change` to the current record under the lock; it returns False to skip the write."""
    with locked(run):
        record = read(run)
        if change(record) is not False:
            write(run, record)
        return record


def end(record: RunRecord, how: str, reason: str, *, exit_code: int | None = None) -> bool:
    """Record an ending once: a run that already ended keeps its first ending.

    The reason is redacted: it may quote a clone URL with a password, or an error that printed a key,
    and `status`, `history` and the ledger show it as written."""
    changed = False
    if exit_code is not None and record.exit_code is None:
        record.exit_code = exit_code
        changed = True
    if record.ended:
        return changed
    record.state, record.reason, record.ended_at = how, redact(reason), utcnow()
    return True
