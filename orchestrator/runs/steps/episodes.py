"""Step: since when the verdict has been tripped, a later episode's trip, and the verdict recorded.

The record's spiral state is rewritten only when the verdict changed or the pass did something:
counts move with every call, and a write per call would be a write per tick.
"""

from __future__ import annotations

from orchestrator.notify.kinds import NoticeKind
from orchestrator.record.model import SpiralState
from orchestrator.runs.events import Event, Kind, of
from orchestrator.runs.steering import track
from orchestrator.runs.steps.base import LIVE
from orchestrator.runs.steps.context import Pass

_VERDICT_KEYS = (
    "region",
    "signals",
    "suspicion",
    "evidence",
    "signals_seen",
    "tripped_in_soft_band",
    "tripped_since_min",
)


class Episodes:
    name = "episodes"
    phases = frozenset({LIVE})
    owns: frozenset[str] = frozenset({"spiral"})
    notices: tuple[NoticeKind, ...] = ()

    def apply(self, p: Pass) -> list[Event]:
        assert p.spiral is not None
        old, new = p.record.spiral, p.spiral
        events: list[Event] = []
        if p.acts:
            assert p.cached is not None and p.verdict is not None
            events += track.episode(old, new, p.verdict, p.cached, round(p.verdict.elapsed_min, 2))
        if changed(old, new) or p.view.events or events:
            p.record.spiral = new
            events.append(of(Kind.EVALUATED))
        return events


def changed(old: SpiralState, new: SpiralState) -> bool:
    return any(getattr(old, k) != getattr(new, k) for k in _VERDICT_KEYS)
