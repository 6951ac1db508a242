"""Step: what the guidance came to: first calls after each receipt, answers whose window closed,
messages past the delivery bound; and, once the run ended, every message still open answered or
withdrawn."""

from __future__ import annotations

from orchestrator.runs.events import Event
from orchestrator.runs.steering import track
from orchestrator.runs.steps.base import CLOSING, LIVE, WITHDRAWING
from orchestrator.runs.steps.context import Pass


class Answers:
    name = "answers"
    phases = frozenset({LIVE, CLOSING, WITHDRAWING})

    def apply(self, p: Pass) -> list[Event]:
        if p.record.active:
            if not p.record.guidance:
                return []
            assert p.cached is not None and p.verdict is not None
            return track.after_verdict(p.rd.guidance, p.record, p.cached, p.verdict, p.real_now, p.cfg.guidance)
        return track.run_ended(p.rd.guidance, p.record, p.cached, p.real_now, p.final)
