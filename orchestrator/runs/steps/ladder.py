"""Step: the escalation ladder climbs a rung when the trip has lasted long enough (its stop rung
is asked of the tick)."""

from __future__ import annotations

from orchestrator.notify import pages
from orchestrator.notify.kinds import NoticeKind
from orchestrator.record.model import RunRecord
from orchestrator.runs.events import Event
from orchestrator.runs.steering import escalate
from orchestrator.runs.steps.base import LIVE
from orchestrator.runs.steps.context import Pass


class EscalationNotice:
    """A rung the ladder climbed (`escalation-<rung>`): what it sent, or that it stopped the run."""

    event = "escalation"
    default_on = True
    ending = False

    def keys(self, record: RunRecord) -> list[str]:
        return [f"escalation-{e.rung}" for e in record.ladder.climbed]

    def compose(self, record: RunRecord, key: str) -> tuple[str, str]:
        return pages.escalation_notice(record, int(key.split("-", 1)[1]))


class Ladder:
    name = "ladder"
    phases = frozenset({LIVE})
    owns: frozenset[str] = frozenset({"ladder", "guidance"})  # a rung climbed, and the message it sent
    notices: tuple[NoticeKind, ...] = (EscalationNotice(),)

    def apply(self, p: Pass) -> list[Event]:
        if not p.acts:
            return []
        assert p.verdict is not None
        climbed, stop = escalate.climb(p.rd.guidance, p.record, p.real_now, round(p.verdict.elapsed_min, 2))
        p.view.ladder_stop = stop
        if stop is not None:
            p.stops["ladder"] = stop
        return climbed
