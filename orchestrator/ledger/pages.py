"""The precision of the pages on this fleet (`history --pages`, `calibrate`'s false-alarm line): every
page of the ledger's `pages` table, with the verdict that counts for it (`page_feedback`), counted for
all pages, per rule (a page counts once for each signal it named) and per bucket (its run's)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from orchestrator.ledger.queries import filters
from orchestrator.ledger.store import connect, recovering

USEFUL, FALSE_ALARM = "useful", "false-alarm"


@dataclass
class Tally:
    """How many pages, and what people said of them."""

    pages: int = 0
    useful: int = 0
    false_alarms: int = 0

    @property
    def judged(self) -> int:
        return self.useful + self.false_alarms

    @property
    def unjudged(self) -> int:
        return self.pages - self.judged

    @property
    def precision(self) -> float | None:
        """useful / judged; None with nothing judged (never 0 %)."""
        return self.useful / self.judged if self.judged else None

    def add(self, verdict: str | None) -> None:
        self.pages += 1
        self.useful += verdict == USEFUL
        self.false_alarms += verdict == FALSE_ALARM

    def to_dict(self) -> dict[str, Any]:
        p = self.precision
        return {
            "pages": self.pages,
            "judged": self.judged,
            "useful": self.useful,
            "false_alarms": self.false_alarms,
            "unjudged": self.unjudged,
            "precision": None if p is None else round(p, 4),
        }


@dataclass
class PagePrecision:
    all: Tally
    by_rule: dict[str, Tally]
    by_bucket: dict[str | None, Tally]

    def to_dict(self) -> dict[str, Any]:
        return {
            "all": self.all.to_dict(),
            "by_rule": [{"rule": k, **t.to_dict()} for k, t in _largest_first(self.by_rule)],
            "by_bucket": [{"bucket": k, **t.to_dict()} for k, t in _largest_first(self.by_bucket)],
        }

    def false_alarms_by_rule(self) -> list[dict[str, Any]]:
        """The rules of the judged pages, those behind the most false alarms first."""
        judged = [(k, t) for k, t in self.by_rule.items() if t.judged]
        judged.sort(key=lambda kt: (-kt[1].false_alarms, -kt[1].judged, kt[0]))
        return [{"rule": k, "false_alarms": t.false_alarms, "judged": t.judged} for k, t in judged]


def _largest_first(groups: dict[Any, Tally]) -> list[tuple[Any, Tally]]:
    return sorted(groups.items(), key=lambda kt: (-kt[1].pages, kt[0] is None, str(kt[0])))


def tally(rows: list[tuple[list[str], str | None, str | None]]) -> PagePrecision:
    """(signals, bucket, verdict or None) per page, counted."""
    out = PagePrecision(Tally(), {}, {})
    for signals, bucket, verdict in rows:
        out.all.add(verdict)
        out.by_bucket.setdefault(bucket, Tally()).add(verdict)
        for rule in dict.fromkeys(signals or []):  # once per rule, however often the page named it
            out.by_rule.setdefault(rule, Tally()).add(verdict)
    return out


@recovering
def page_precision(
    *, since: datetime | None = None, ticket: str | None = None, state: str | None = None
) -> PagePrecision:
    """Every page of the runs `history` would list (its filters are on the run), with its verdict."""
    where, args = filters(since, ticket, state)
    sql = f"""
        SELECT p.signals, r.bucket, f.verdict
        FROM pages p JOIN runs r ON r.run_id = p.run_id
        LEFT JOIN page_feedback f ON f.run_id = p.run_id AND f.episode = p.episode
        {"WHERE " + " AND ".join(where) if where else ""}"""
    with connect(read_only=True) as con:
        return tally(con.execute(sql, args).fetchall())
