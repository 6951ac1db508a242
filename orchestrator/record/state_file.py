"""state.json: a run's single source of truth, written atomically under a lock.

Several processes touch a run (its supervisor, `status`, `watch`, `kill`);
every read-modify-write holds the run's lock file and re-reads inside it.
"""

from __future__ import annotations

import fcntl
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.infra.atomic import write_text_atomic
from orchestrator.infra.errors import UserError

STATE_VERSION = 1
ACTIVE = ("launching", "running")
ENDED = ("succeeded", "failed", "stalled", "killed", "lost")


def utcnow() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@contextmanager
def locked(run_dir: Path) -> Iterator[None]:
    with (run_dir / ".lock").open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def read(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "state.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{run_dir.name}: no state.json in {run_dir}") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UserError(f"{path}: state file is not valid JSON") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: state file is not a JSON object")
    return data


def write(run_dir: Path, state: dict[str, Any]) -> None:
    state["version"] = STATE_VERSION
    state["updated_at"] = utcnow()
    write_text_atomic(run_dir / "state.json", json.dumps(state, indent=2, sort_keys=True) + "\n")


def update(run_dir: Path, change: Callable[[dict[str, Any]], bool | None]) -> dict[str, Any]:
    """Apply `change` to the current state under the lock; it returns False to skip the write."""
    with locked(run_dir):
        state = read(run_dir)
        if change(state) is not False:
            write(run_dir, state)
        return state


def end(state: dict[str, Any], how: str, reason: str, **extra: Any) -> bool:
    """Record an ending once: a run that already ended keeps its first ending."""
    if state.get("state") in ENDED:
        return False
    state["state"] = how
    state["reason"] = reason
    state["ended_at"] = utcnow()
    state.update(extra)
    return True
