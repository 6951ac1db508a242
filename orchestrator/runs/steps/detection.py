"""Step: the detector's verdict at this moment, and the page's trip when it first pages.

The new spiral state (`Pass.spiral`) carries the page's facts over and takes the verdict and the
counts; the episodes step records it.
"""

from __future__ import annotations

import msgspec

from orchestrator.notify import pages
from orchestrator.notify.kinds import NoticeKind
from orchestrator.notify.pages import redact_cut
from orchestrator.record.clock import RunClock
from orchestrator.record.model import RunRecord
from orchestrator.runs import evaluator
from orchestrator.runs.events import Event, Kind, of
from orchestrator.runs.steps.base import LIVE
from orchestrator.runs.steps.context import Pass


class SpiralPage:
    """The page: the run's first trip in its band (`spiral`), and each later episode's (`spiral-<n>`):
    it tripped again after guidance was received and the windows restarted."""

    event = "spiral"
    default_on = True
    ending = False

    def keys(self, record: RunRecord) -> list[str]:
        first = ["spiral"] if record.spiral.tripped_in_soft_band else []
        return first + [f"spiral-{e.n}" for e in record.spiral.episodes if e.tripped_at_min is not None]

    def compose(self, record: RunRecord, key: str) -> tuple[str, str]:
        return pages.spiral_page(record, episode=int(key.split("-", 1)[1]) if "-" in key else 1)


class Detection:
    name = "detection"
    phases = frozenset({LIVE})
    owns: frozenset[str] = frozenset()  # the verdict goes to the pass (p.spiral); episodes records it
    notices: tuple[NoticeKind, ...] = (SpiralPage(),)

    def apply(self, p: Pass) -> list[Event]:
        cached = p.cached
        assert cached is not None
        now = RunClock.of(p.record).at(p.real_now)
        verdict = p.verdict = cached.detector.evaluate(cached.agent_time(now))
        old = p.record.spiral
        new = p.spiral = msgspec.structs.replace(  # the page's facts carry over; the verdict and counts are new
            old,
            region=verdict.region,
            signals=list(verdict.signals),
            suspicion=verdict.suspicion,
            evidence=[redact_cut(e) for e in verdict.evidence],  # a path (or its shortened tail) may hold a token
            signals_seen=sorted(set(old.signals_seen) | set(verdict.signals)),
            skipped_lines=cached.skipped_lines + cached.adapter.skipped,
            tool_calls=cached.detector.calls,
        )
        if not (p.acts and verdict.should_page and not old.tripped_in_soft_band):
            return []
        new.tripped_in_soft_band, new.tripped_at_min = True, round(verdict.elapsed_min, 2)
        new.page_signals, new.page_evidence = list(verdict.signals), list(new.evidence)
        new.page_recent = evaluator.briefs(cached)
        return [of(Kind.TRIPPED)]
