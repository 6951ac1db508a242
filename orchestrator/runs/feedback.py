"""A person's verdict on a run's page (`feedback RUN useful|false-alarm`, or a button of `serve --actions`).

Kept in the run's record, a verdict per page (the latest given counts); the ledger reads them, and
`history --pages` turns them into the precision of the pages on this fleet, by rule and by bucket.
"""

from __future__ import annotations

import time
from pathlib import Path

from orchestrator.infra.errors import UserError
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import PageFeedback, RunRecord
from orchestrator.record.pages import pages
from spiral.timestamps import format_ts

VERDICTS = ("useful", "false-alarm")
VIA = ("cli", "page", "notification")


def judge(record: RunRecord, verdict: str, via: str, now: float, episode: int | None = None) -> PageFeedback:
    """Add a verdict to `record` (the caller holds the lock and writes); UserError when there is nothing to judge."""
    if verdict not in VERDICTS:
        raise UserError(f"the verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}")
    made = [(n, signals) for n, _, signals in pages(record)]
    if not made:
        raise UserError(f"run {record.run_id} has not paged: there is no page to judge")
    by_episode = dict(made)
    n = made[-1][0] if episode is None else episode
    if n not in by_episode:
        raise UserError(f"run {record.run_id} has no page {n} (its pages: {', '.join(str(p) for p, _ in made)})")
    given = PageFeedback(verdict=verdict, at=format_ts(now), episode=n, signals=by_episode[n], via=via)
    record.feedback.append(given)
    return given


def give(run: RunDir | Path, verdict: str, via: str = "cli", episode: int | None = None) -> PageFeedback:
    """Record a verdict on the run's latest page (or page `episode`), under the run's lock."""
    given: list[PageFeedback] = []

    def change(r: RunRecord) -> bool:
        given.append(judge(r, verdict, via, time.time(), episode))
        return True

    state_file.update(RunDir.of(run), change)
    return given[0]
