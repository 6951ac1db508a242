"""The rows of `status`, read-only: each run's record as the watcher last wrote it, never evaluated.

A `status` pass admits queued runs, enforces liveness and sends notices; a page that
anyone may reload must do none of that. Here each state.json is only read (writes are
atomic renames, so no lock is needed) and turned into `RunView(...).to_dict()`; only the
clock-derived facts (elapsed time, time since the last log line) are computed now.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from orchestrator.buckets import BucketsFile
from orchestrator.infra.errors import UserError
from orchestrator.record import state_file
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord
from orchestrator.runs import fleet, monitor
from orchestrator.runs.view import RunView
from spiral.settings import Settings, SettingsError
from spiral.timestamps import parse_ts

# run id -> the expected minutes of its frozen settings (a run's settings never change)
_EXPECTED: dict[str, float] = {}


def rows(now: float | None = None) -> list[dict[str, Any]]:
    """Every run's `status --json` row, from its record alone."""
    now = time.time() if now is None else now
    places = _queue_positions()
    out = []
    buckets: list[BucketsFile] = []  # read once, and only for older records without frozen settings
    for run_dir in monitor.list_run_dirs():
        view = view_of(run_dir, now, buckets)
        view.queue_position = places.get(view.run_id)
        out.append(view.to_dict())
    return out


def view_of(run_dir: Path, now: float, buckets: list[BucketsFile] | None = None) -> RunView:
    rd = RunDir.of(run_dir)
    try:
        record = state_file.read_shared(rd)  # read again only when it changed; never changed here
    except UserError as exc:
        return RunView(rd.path, RunRecord(run_id=rd.run_id, state="unreadable"), error=str(exc))
    view = RunView(rd.path, record)
    try:
        view.expected_min = _expected_min(record, buckets if buckets is not None else [])
    except (UserError, SettingsError) as exc:
        view.error = f"run {record.run_id}: its settings cannot be read: {exc}"
    clock = RunClock.of(record)
    ended = parse_ts(record.ended_at)
    if not record.queued:  # a queued run's clock starts when its agent does
        until = ended if ended is not None and record.ended else now
        view.elapsed_min = max(0.0, clock.seconds(until - clock.started_at) / 60.0)
    try:  # as `status` has them: on the run's clock (liveness), and in real seconds (what people read)
        silent = max(0.0, now - rd.events.stat().st_mtime)
        view.last_activity_s, view.last_activity_real_s = clock.seconds(silent), silent
    except OSError:
        view.last_activity_s = None
    if ended is not None and record.ended:  # an ended run: real seconds since it ended
        view.last_activity_real_s = max(0.0, now - ended)
    return view


def _expected_min(record: RunRecord, buckets: list[BucketsFile]) -> float:
    known = _EXPECTED.get(record.run_id)
    if known is not None:
        return known
    if record.settings is not None:
        settings = Settings.from_mapping(record.settings)
    else:  # an older record: buckets.yaml, with the ticket's overrides
        if not buckets:
            buckets.append(BucketsFile())
        b = buckets[0]
        settings = (
            b.with_overrides(record.overrides, f"{record.ticket_path} (run {record.run_id})", {}, ())
            if record.overrides
            else b.settings
        )
    bucket = settings.buckets.get(str(record.bucket))
    expected = bucket.expected_min if bucket is not None else 0.0
    if record.settings is not None:
        _EXPECTED[record.run_id] = expected
    return expected


def _queue_positions() -> dict[str, int]:
    try:
        return fleet.queue_positions()
    except OSError:
        return {}
