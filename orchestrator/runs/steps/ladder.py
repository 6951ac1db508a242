"""Step: the escalation ladder climbs a rung when the trip has lasted long enough (its stop rung
is asked of the tick)."""

from __future__ import annotations

from orchestrator.runs.events import Event
from orchestrator.runs.steering import escalate
from orchestrator.runs.steps.base import LIVE
from orchestrator.runs.steps.context import Pass


class Ladder:
    name = "ladder"
    phases = frozenset({LIVE})

    def apply(self, p: Pass) -> list[Event]:
        if not p.acts:
            return []
        assert p.verdict is not None
        climbed, stop = escalate.climb(p.rd.guidance, p.record, p.real_now, round(p.verdict.elapsed_min, 2))
        p.view.ladder_stop = stop
        if stop is not None:
            p.stops["ladder"] = stop
        return climbed
