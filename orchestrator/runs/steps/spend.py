"""Step: tokens and dollars so far, the ceilings' warnings and stop, and the running total kept in
the record (the daily ceiling and the notices read it)."""

from __future__ import annotations

from orchestrator.runs import budget
from orchestrator.runs.events import Event, Kind, of
from orchestrator.runs.steps.base import LIVE
from orchestrator.runs.steps.context import Pass, spend_of
from spiral.timestamps import parse_ts


class Spend:
    name = "spend"
    phases = frozenset({LIVE})

    def apply(self, p: Pass) -> list[Event]:
        assert p.cached is not None
        record, view = p.record, p.view
        view.spend = spend_of(p.rd, record, p.cached, p.cfg)
        events, over = budget.check(record, view.spend)
        if over is not None:
            p.stops["budget"] = over
        written_ago = p.real_now - (parse_ts(record.updated_at) or 0.0)
        if budget.live_changed(record.spend_live, view.spend, written_ago):
            record.spend_live = view.spend
            events.append(of(Kind.SPEND))
        return events
