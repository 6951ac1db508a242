"""Step: the guidance receipts first, then what the run's files gained, into its kept detector.

A receipt restarts the detector's windows where the message reached the agent, so it is taken
before the calls after it are fed. A run that just ended is fed to the end of its log, and its
verdict on the whole log is taken (the ending's answers read it).
"""

from __future__ import annotations

from orchestrator.notify.kinds import NoticeKind
from orchestrator.record.clock import RunClock
from orchestrator.runs import evaluator
from orchestrator.runs.events import Event
from orchestrator.runs.steps.base import CLOSING, LIVE
from orchestrator.runs.steps.context import Pass, catch_up
from spiral.timestamps import parse_ts


class Feed:
    name = "feed"
    phases = frozenset({LIVE, CLOSING})
    owns: frozenset[str] = frozenset({"guidance", "spiral"})  # receipts, and the windows restarted there
    notices: tuple[NoticeKind, ...] = ()

    def apply(self, p: Pass) -> list[Event]:
        receipts: list[Event] = []
        p.cached = catch_up(p.rd, p.record, p.settings, p.real_now, receipts)
        if p.record.active:
            return receipts
        evaluator.flush(p.cached)
        ended = parse_ts(p.record.ended_at) or p.real_now
        p.final = p.cached.detector.evaluate(p.cached.agent_time(RunClock.of(p.record).at(ended)))
        return receipts
