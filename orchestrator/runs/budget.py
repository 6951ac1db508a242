"""Spend ceilings: a run's `max_usd` / `max_tokens` (ticket or profile), and the fleet's daily ceiling.

A run's spend is the one the ledger and `status` show (the agent's log and its own session files,
priced by ledger/prices.py). At WARN_AT of a ceiling the run is noticed once (notice `budget-70`);
at 100 % it is stopped and recorded with its own ending, `over_budget`. A ceiling in dollars needs a
priced model: an unpriced run is held to its token ceiling only, and its record says so.
The daily ceiling (config.yaml `daily_max_usd`) holds the queue: no queued run starts once the runs
started today (UTC) have spent it (runs/fleet.py).
"""

from __future__ import annotations

from orchestrator.record.model import RunRecord, SpendTotals
from orchestrator.runs.events import Event, Kind, of
from orchestrator.runs.liveness import Decision

WARN_AT = 0.7
LIVE_SHARE = 0.02  # ceilings.live is written again once the spend grew this share (live_changed)
LIVE_REFRESH_S = 300.0  # ...or this long after the record was last written
OVER = "over_budget"


def used(record: RunRecord, spend: SpendTotals | None) -> tuple[float | None, str]:
    """The largest share of a ceiling spent (None: no ceiling applies), and what it is a share of."""
    if spend is None:
        return None, ""
    shares: list[tuple[float, str]] = []
    c = record.ceilings
    if c.max_tokens is not None:
        shares.append((spend.tokens / c.max_tokens, f"{spend.tokens} of {c.max_tokens} tokens"))
    if c.max_usd is not None and spend.cost_usd is not None:
        shares.append((spend.cost_usd / c.max_usd, f"${spend.cost_usd:.2f} of ${c.max_usd:.2f}"))
    if not shares:
        return None, ""
    return max(shares)


def check(record: RunRecord, spend: SpendTotals | None) -> tuple[list[Event], Decision | None]:
    """This pass's budget events (the record is changed for them), and the stop when a ceiling is reached."""
    share, what = used(record, spend)
    events: list[Event] = []
    unpriced = spend is not None and spend.cost_usd is None and spend.tokens > 0  # (not: no usage reported yet)
    if record.ceilings.max_usd is not None and unpriced and not record.ceilings.unpriced:
        record.ceilings.unpriced = True  # said once: a dollar ceiling on an unpriced model cannot be held
        events.append(of(Kind.BUDGET, "budget: max_usd not enforced (the model is unpriced)"))
    if share is None:
        return events, None
    if share >= WARN_AT and record.ceilings.warned_at is None:
        record.ceilings.warned_at = round(share, 3)
        events.append(of(Kind.BUDGET, f"budget {share:.0%}: {what}"))
    if share >= 1.0:
        return events, Decision(OVER, f"spend ceiling reached: {what} ({share:.0%})")
    return events, None


def live_changed(old: SpendTotals | None, new: SpendTotals | None, written_s_ago: float = float("inf")) -> bool:
    """Whether the spend moved enough to be written into the record.

    A move is a cent or a thousand tokens; it is written when it is LIVE_SHARE of the figure last
    written, when a price became known or unknown, or once LIVE_REFRESH_S passed since the record
    was written. A long run's spend grows by a sliver a tick, and each write is two fsyncs: written
    on every move, it cost more than the rest of a `status` pass over a fleet of long runs.
    The figure read meanwhile (the daily ceiling, a page) is at most that share or that age behind.
    """
    if new is None:
        return False
    if old is None:
        return new.tokens > 0
    cents = (round((old.cost_usd or 0) * 100), round((new.cost_usd or 0) * 100))
    if old.tokens // 1000 == new.tokens // 1000 and cents[0] == cents[1]:
        return False
    if written_s_ago >= LIVE_REFRESH_S or (old.cost_usd is None) != (new.cost_usd is None):
        return True
    grown = new.tokens >= old.tokens * (1 + LIVE_SHARE)
    return grown or (new.cost_usd or 0) >= (old.cost_usd or 0) * (1 + LIVE_SHARE)
