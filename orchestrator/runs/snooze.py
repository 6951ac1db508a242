"""`snooze`: hold a run's escalation ladder for a while (no rung is climbed until then), or lift the hold."""

from __future__ import annotations

import time
from pathlib import Path

from orchestrator.infra.errors import UserError
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord
from spiral.timestamps import format_ts, parse_ts

DEFAULT_MINUTES = 60.0
MAX_MINUTES = 7 * 24 * 60.0


def snoozed(record: RunRecord, real_now: float) -> bool:
    """Whether the run's ladder is on hold at `real_now`."""
    until = parse_ts(record.ladder.snoozed_until)
    return until is not None and real_now < until


def hold(record: RunRecord, minutes: float | None, now: float) -> str | None:
    """Snooze `record`'s ladder for `minutes` (None: lift the hold); returns until when (the caller writes)."""
    if not record.ladder.rungs:
        raise UserError(f"run {record.run_id} has no escalation ladder: there is nothing to snooze")
    if not record.active:
        raise UserError(f"run {record.run_id} has ended ({record.state}): its ladder climbs no more")
    if minutes is None:
        record.ladder.snoozed_until = None
        return None
    if not 0 < minutes <= MAX_MINUTES:
        raise UserError(f"snooze for more than 0 and at most {MAX_MINUTES:g} minutes, not {minutes:g}")
    record.ladder.snoozed_until = format_ts(now + minutes * 60.0)
    return record.ladder.snoozed_until


def snooze(run: RunDir | Path, minutes: float | None) -> str | None:
    """Under the run's lock: hold its ladder for `minutes`, or lift the hold (None)."""
    out: list[str | None] = []

    def change(r: RunRecord) -> bool:
        out.append(hold(r, minutes, time.time()))
        return True

    state_file.update(RunDir.of(run), change)
    return out[0]
