"""state.json: a run's record, read and written atomically under the run's lock.

Several processes touch a run (its supervisor, `status`, `watch`, `kill`);
every read-modify-write holds the run's lock file and re-reads inside it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.infra.atomic import write_text_atomic
from orchestrator.infra.errors import UserError
from orchestrator.infra.lock import held
from orchestrator.record.layout import RunDir
from orchestrator.record.model import ACTIVE, ENDED, VERSION, RecordError, RunRecord, from_builtins, to_builtins

__all__ = ["ACTIVE", "ENDED", "end", "locked", "read", "update", "utcnow", "write"]


def utcnow() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@contextmanager
def locked(run: RunDir | Path) -> Iterator[None]:
    with held(RunDir.of(run).lock):
        yield


def read(run: RunDir | Path) -> RunRecord:
    rd = RunDir.of(run)
    try:
        raw = json.loads(rd.state_json.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{rd.run_id}: no state.json in {rd.path}") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UserError(f"{rd.state_json}: state file is not valid JSON") from None
    try:
        return from_builtins(raw, rd.run_id)
    except RecordError as exc:
        raise UserError(f"{rd.state_json}: {exc}") from None


def write(run: RunDir | Path, record: RunRecord) -> None:
    record.version = VERSION
    record.updated_at = utcnow()
    text = json.dumps(to_builtins(record), indent=2, sort_keys=True) + "\n"
    write_text_atomic(RunDir.of(run).state_json, text)


def update(run: RunDir | Path, change: Callable[[RunRecord], bool | None]) -> RunRecord:
    """Apply `change` to the current record under the lock; it returns False to skip the write."""
    with locked(run):
        record = read(run)
        if change(record) is not False:
            write(run, record)
        return record


def end(record: RunRecord, how: str, reason: str, *, exit_code: int | None = None) -> bool:
    """Record an ending once: a run that already ended keeps its first ending."""
    changed = False
    if exit_code is not None and record.exit_code is None:
        record.exit_code = exit_code
        changed = True
    if record.ended:
        return changed
    record.state, record.reason, record.ended_at = how, reason, utcnow()
    return True
