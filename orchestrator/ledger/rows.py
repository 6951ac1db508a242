"""One run folder as the ledger's rows: the run, its signals, notices, ending, guidance, escalations,
pages and the verdicts on them (read, never written)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.infra.errors import UserError
from orchestrator.ledger import prices as pricing
from orchestrator.ledger.agent_records import RunSpend
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import Delivered, RunRecord
from orchestrator.record.pages import pages, verdicts
from orchestrator.record.run_files import LineCounter, events_in
from spiral.adapters import make_adapter
from spiral.timestamps import parse_ts


@dataclass
class LedgerRows:
    row: dict[str, Any]
    signals: list[tuple[str, bool]]
    notices: list[tuple[str, bool, int, datetime | None, str | None]]
    ending: tuple[str, str | None, datetime | None, int | None] | None
    guidance: list[tuple[Any, ...]] = field(default_factory=list)  # the `guidance` table's rows, less run_id
    escalations: list[tuple[Any, ...]] = field(default_factory=list)
    pages: list[tuple[Any, ...]] = field(default_factory=list)  # (episode, tripped_at_min, signals)
    feedback: list[tuple[Any, ...]] = field(default_factory=list)  # (episode, verdict, signals, given_at, via)


def _when(value: Any) -> datetime | None:
    ts = parse_ts(value)
    return datetime.fromtimestamp(ts, tz=UTC).replace(tzinfo=None) if ts is not None else None


@dataclass
class LogScan:
    spend: RunSpend
    tool_calls: int = 0
    lines: int = 0
    unreadable: int = 0


def scan_log(events: Path, fmt: str, model: str | None = None, homes: dict[str, str] | None = None) -> LogScan:
    """Spend and tool calls of one run's log, read from the file itself; torn lines are skipped.

    With `homes` (the record's agent_homes), spend also counts the agent's own session
    files (ledger/agent_records.py), which the log alone undercounts until it ends.
    """
    scan = LogScan(RunSpend.of(fmt, model))
    try:
        adapter = make_adapter(fmt)
    except ValueError:
        return scan
    counter = LineCounter()
    spend = scan.spend.counter.feeder()  # the format's line function, chosen once
    with events_in(events, counter) as lines:
        for ts, data in lines:
            scan.lines += 1
            spend(data)
            scan.tool_calls += len(adapter.feed(ts, data))
    scan.unreadable = counter.skipped
    if homes:
        scan.spend.read_agent_files(homes)
    return scan


def read_run(run_dir: Path, prices: dict[str, tuple[float, float, float, float]]) -> LedgerRows | None:
    """The ledger's view of one run folder, or None when its state.json is unreadable."""
    rd = RunDir(run_dir)
    try:
        record = state_file.read(rd)
        mtime = rd.state_json.stat().st_mtime
    except (OSError, UserError):
        return None
    size = rd.events.stat().st_size if rd.events.exists() else 0
    scan = scan_log(rd.events, record.format or "generic", record.model, record.agent_homes)
    spend = scan.spend.spend
    cost, unpriced = pricing.cost(spend, prices)
    totals = (spend.input_tokens, spend.output_tokens, spend.cache_read_tokens, spend.cache_write_tokens)
    kept = record.spend
    if kept is not None and kept.tokens > spend.tokens:
        # the agent's own files are gone since the run ended: the totals taken then stand
        totals = (kept.input_tokens, kept.output_tokens, kept.cache_read_tokens, kept.cache_write_tokens)
        cost, unpriced = kept.cost_usd, list(kept.unpriced_models)
    spiral = record.spiral
    started, ended = parse_ts(record.started_at), parse_ts(record.ended_at)
    wall = (ended - started) * record.time_scale / 60 if started is not None and ended is not None else None
    row = {
        "run_id": rd.run_id,
        "ticket_id": record.ticket_id,
        "bucket": record.bucket,
        "agent": record.agent,
        "format": record.format,
        "state": record.state,
        "reason": record.reason,
        "created_at": _when(record.created_at),
        "started_at": _when(record.started_at),
        "ended_at": _when(record.ended_at),
        "wall_min": round(wall, 3) if wall is not None else None,
        "time_scale": record.time_scale,
        "exit_code": record.exit_code,
        "tool_calls": scan.tool_calls,
        "tripped_at_min": spiral.tripped_at_min,
        "notified": spiral.notified,
        "state_mtime": mtime,
        "events_size": size,
        "indexed_at": datetime.now(UTC).replace(tzinfo=None),
        "input_tokens": totals[0],
        "output_tokens": totals[1],
        "cache_read_tokens": totals[2],
        "cache_write_tokens": totals[3],
        "cost_usd": cost,
        "unpriced_models": ",".join(unpriced) or None,
        **_delivery(record.delivered),
    }
    seen = set(spiral.signals_seen) | set(record.hints)
    paged = set(spiral.page_signals)
    signals = [(s, s in paged) for s in sorted(seen | paged)]
    notices = [
        (event, n.delivered, n.attempts, _when(n.delivered_at), n.last_error) for event, n in record.notices.items()
    ]
    ending = None
    if record.ended_at:
        ending = (record.state, record.reason, _when(record.ended_at), record.exit_code)
    guidance = [
        (
            g.id,
            g.kind,
            g.by,
            g.via,
            _when(g.queued_at),
            g.queued_at_min,
            _when(g.received_at),
            g.received_at_min,
            g.undelivered,
            ",".join(g.signals_at_receipt) or None,
            g.answer,
            g.answer_at_min,
        )
        for g in record.guidance
    ]
    escalations = [(e.rung, e.action, _when(e.at), e.at_min, e.why, e.guidance_id) for e in record.ladder.climbed]
    return LedgerRows(row, signals, notices, ending, guidance, escalations, *page_rows(record))


def page_rows(record: RunRecord) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The `pages` rows (every page the run tripped) and the `page_feedback` rows (the verdict that
    counts for a page: the latest given), as record/pages.py reads them."""
    judged = verdicts(record)
    feedback = [(n, f.verdict, list(dict.fromkeys(f.signals)), _when(f.at), f.via) for n, f in sorted(judged.items())]
    return pages(record), feedback


def _delivery(d: Delivered | None) -> dict[str, Any]:
    """The `runs` table's delivery columns (all null: nothing was delivered, or it was not tried)."""
    return {
        "delivered_branch": d.branch if d else None,
        "delivered_commit": d.commit if d else None,
        "pushed_at": _when(d.pushed_at) if d else None,
        "pr_url": d.pr_url if d else None,
        "delivery_error": d.error if d else None,
    }
