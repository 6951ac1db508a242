"""Step: tokens and dollars so far, the ceilings' warnings and stop, and the running total kept in
the record (the daily ceiling and the notices read it)."""

from __future__ import annotations

from orchestrator.notify import pages
from orchestrator.notify.kinds import NoticeKind
from orchestrator.record.model import RunRecord
from orchestrator.runs import budget
from orchestrator.runs.events import Event, Kind, of
from orchestrator.runs.steps.base import LIVE
from orchestrator.runs.steps.context import Pass, spend_of
from spiral.timestamps import parse_ts


class BudgetNotice:
    """A ceiling 70 % spent (`budget-70`), and a queued run held by the daily ceiling, once a day
    (`budget-held-<date>`)."""

    event = "budget"

    def keys(self, record: RunRecord) -> list[str]:
        out = ["budget-70"] if record.ceilings.warned_at is not None else []
        if record.held is not None and record.queued:
            out.append(f"budget-held-{(record.held_since or '')[:10]}")
        return out

    def compose(self, record: RunRecord, key: str) -> tuple[str, str]:
        return pages.budget_notice(record, key)


class Spend:
    name = "spend"
    phases = frozenset({LIVE})
    owns: frozenset[str] = frozenset({"ceilings"})
    notices: tuple[NoticeKind, ...] = (BudgetNotice(),)

    def apply(self, p: Pass) -> list[Event]:
        assert p.cached is not None
        record, view = p.record, p.view
        view.spend = spend_of(p.rd, record, p.cached, p.cfg)
        events, over = budget.check(record, view.spend)
        if over is not None:
            p.stops["budget"] = over
        written_ago = p.real_now - (parse_ts(record.updated_at) or 0.0)
        if budget.live_changed(record.ceilings.live, view.spend, written_ago):
            record.ceilings.live = view.spend
            events.append(of(Kind.SPEND))
        return events
