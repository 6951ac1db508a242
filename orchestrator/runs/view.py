"""One run as a pass saw it (`RunView`), and its `status --json` row."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.infra.redaction import redact_cut
from orchestrator.record.model import RunRecord, SpendTotals
from orchestrator.runs.events import Event
from orchestrator.runs.executors.base import executes_on
from orchestrator.runs.liveness import Decision
from orchestrator.runs.steering import track
from spiral.verdict import json_number


@dataclass
class RunView:
    run_dir: Path
    record: RunRecord
    elapsed_min: float = 0.0
    expected_min: float = 0.0
    last_activity_s: float | None = None  # run-clock seconds since the log grew (liveness: the demo's fast clock)
    last_activity_real_s: float | None = None  # wall-clock seconds since the log grew; an ended run: since it ended
    spend: SpendTotals | None = None
    error: str | None = None  # why this run could not be looked at
    events: list[Event] = field(default_factory=list)  # what this pass did (orchestrator/runs/events.py)
    ladder_stop: Decision | None = None  # the escalation ladder's stop rung, to carry out
    queue_position: int | None = None  # a queued run's place in the queue (1: next to start)
    evaluating: str | None = None  # its cache is being rebuilt ("2 of 5 runs"): shown as last recorded

    @property
    def run_id(self) -> str:
        return self.run_dir.name

    def to_dict(self) -> dict[str, Any]:
        r = self.record
        spiral = r.spiral
        spend = self.spend or r.spend or r.ceilings.live  # `serve` reads records only: a live run's running total
        notices = {  # every notice of the run (the page, the endings...) and how its delivery stands
            key: {
                "delivered": n.delivered,
                "attempts": n.attempts,
                "gave_up": n.gave_up,
                "last_error": None if n.last_error is None else redact_cut(n.last_error),
            }
            for key, n in r.notices.items()
        }
        return {
            "id": self.run_id,
            "ticket": r.ticket_id,
            "bucket": r.bucket,
            "agent": r.agent,
            "state": r.state,
            "reason": r.reason,
            "elapsed_min": round(self.elapsed_min, 2),
            "expected_min": self.expected_min,
            "region": spiral.region,
            "signals": list(spiral.signals),
            "suspicion": json_number(spiral.suspicion),
            "evidence": [redact_cut(e) for e in spiral.evidence],  # again: a record an older version wrote
            "tripped_at_min": spiral.tripped_at_min,
            "at_threshold": spiral.tripped_since_min is not None,  # suspicion at or over the threshold now
            "notified": spiral.notified,
            "page_error": notices["spiral"]["last_error"] if "spiral" in notices else None,
            "notices": notices,
            "delivered": msgspec.to_builtins(r.delivered) if r.delivered is not None else None,
            # the ticket's `setup:` is running: the run is launching, its agent not started yet
            "setting_up": bool(r.setup or r.copy) and r.state == "launching" and r.agent_pid is None,
            "provider": msgspec.to_builtins(r.provider) if r.provider is not None else None,
            "hints": list(r.hints),
            "last_activity_s": None if self.last_activity_s is None else round(self.last_activity_s, 1),
            "last_activity_real_s": None if self.last_activity_real_s is None else round(self.last_activity_real_s, 1),
            "tokens": spend.tokens if spend is not None else None,
            "cost_usd": spend.cost_usd if spend is not None else None,
            "started_at": r.started_at,
            "ended_at": r.ended_at,
            "error": self.error,
            "queue_position": self.queue_position,
            "evaluating": self.evaluating,
            "verified": r.verified,
            "max_usd": r.ceilings.max_usd,
            "max_tokens": r.ceilings.max_tokens,
            "executes_on": executes_on(r),  # local:<host> | ray:<node>; null: not yet placed
            "held": r.held,  # the ticket's verify: check passed / failed; null: none ran
            **track.status_fields(r),
        }
