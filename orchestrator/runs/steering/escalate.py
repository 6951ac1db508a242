"""Climb the run's escalation ladder when a rung is due (ladder.py decides; this acts and records).

Called under the run's lock by each pass, after the verdict. A text rung queues its message like
`nudge` does (by "escalation"); a stop rung asks for the run to be stopped and recorded `stalled`
with the ladder as its reason. Every rung climbed is kept in the record (`escalations`) and sent as
an `escalation` notice.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.guidance import ladder
from orchestrator.record.model import Escalation, RunRecord
from orchestrator.runs.events import Event, Kind, of
from orchestrator.runs.liveness import Decision
from orchestrator.runs.snooze import snoozed
from orchestrator.runs.steering import stock, track
from spiral.timestamps import format_ts


def climb(gdir: Path, record: RunRecord, real_now: float, now_min: float) -> tuple[list[Event], Decision | None]:
    """What this pass climbed (as pass events), and the stop to carry out, if the rung was a stop.
    `now_min`: the agent's minutes (provider waits left out), the clock of the page and the receipts."""
    if not record.ladder.rungs or record.provider is not None:
        return [], None  # off; or the agent is waiting on its model API, which no rung can help
    if snoozed(record, real_now):
        return [], None  # a person put it on hold (`snooze`, or the run page's button)
    s = record.spiral
    due = ladder.next_due(
        record.ladder.rungs,
        record.ladder.climbed,
        record.guidance,
        page_at_min=s.tripped_at_min,
        evidence_since_min=s.tripped_since_min,
        now_min=now_min,
    )
    if due is None:
        return [], None
    rung = record.ladder.rungs[due.rung - 1]
    step = Escalation(
        rung=due.rung,
        action=due.action,
        at=format_ts(real_now),
        at_min=now_min,
        why=due.why,
        signals=list(s.signals),
        evidence=list(s.evidence),
    )
    record.ladder.climbed.append(step)
    if due.action == "stop":
        return [of(Kind.ESCALATION, f"escalation {due.rung}: stop")], Decision(
            "stalled", f"escalation ladder rung {due.rung} (stop): {due.why}"
        )
    if record.guidance_via is None:
        step.why += "; this run's agent takes no guidance, so nothing was sent"
        return [of(Kind.ESCALATION, f"escalation {due.rung}: {due.action} (not sent)")], None
    g = track.queue(gdir, record, rung.text or stock.text(due.action, record), due.action, "escalation", real_now)
    step.guidance_id = g.id
    return [of(Kind.ESCALATION, f"escalation {due.rung}: {due.action} queued as {g.id}")], None
