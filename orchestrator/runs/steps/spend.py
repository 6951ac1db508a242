"""Step: tokens and dollars so far, the ceilings' warnings and stop, and the running total kept in
the record (the daily ceiling and the notices read it)."""

from __future__ import annotations

from orchestrator.config import UserConfig
from orchestrator.ledger import prices
from orchestrator.notify import pages
from orchestrator.notify.kinds import NoticeKind
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord, SpendTotals
from orchestrator.runs import budget, evaluator
from orchestrator.runs.events import Event, Kind, of
from orchestrator.runs.steps.base import LIVE
from orchestrator.runs.steps.context import KEPT, Pass
from spiral.timestamps import parse_ts


class BudgetNotice:
    """A ceiling 70 % spent (`budget-70`), and a queued run held by the daily ceiling, once a day
    (`budget-held-<date>`)."""

    event = "budget"
    default_on = True
    ending = False

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


def spend_of(rd: RunDir, record: RunRecord, cached: evaluator.Cached, cfg: UserConfig) -> SpendTotals | None:
    """Tokens and dollars so far: the log, and what the agent's own session files gained since the last look."""
    run = cached.spend
    if run is None:
        return None
    looked_up, offsets = len(run.memo), sum(run.offsets.values())
    read = run.read_agent_files(record.agent_homes)
    sp = run.spend
    cost, unpriced = prices.cost(sp, cfg.prices, run.memo)
    priced = len(run.memo) != looked_up  # a price looked up: worth a write at once (it may have cost an import)
    if record.active and (read or priced):
        # the next look starts where this one ended (a transcript read from its start is worth a write)
        read_bytes = max(0, sum(run.offsets.values()) - offsets)
        KEPT.put(rd.detector_cache, cached, read=read_bytes, changed=True, dear=priced)
    return SpendTotals(
        tokens=sp.tokens,
        input_tokens=sp.input_tokens,
        output_tokens=sp.output_tokens,
        cache_read_tokens=sp.cache_read_tokens,
        cache_write_tokens=sp.cache_write_tokens,
        cost_usd=cost,
        unpriced_models=unpriced,
    )
