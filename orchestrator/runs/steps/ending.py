"""Step: a run that just ended is accounted once: its case file learns the guidance restarts, its
record keeps the whole log's spend and call count, and its kept detector is let go."""

from __future__ import annotations

from orchestrator.notify import pages
from orchestrator.notify.kinds import NoticeKind
from orchestrator.record import case_file
from orchestrator.record.clock import RunClock
from orchestrator.record.model import RunRecord
from orchestrator.runs.events import Event, Kind, of
from orchestrator.runs.steps.base import CLOSING
from orchestrator.runs.steps.context import KEPT, Pass
from orchestrator.runs.steps.spend import spend_of
from spiral.timestamps import parse_ts

# the ways a run ends, each a notice; on by default, every one that needs a person (none that went
# wrong is left silent): not a success, a kill someone asked for, or a lost supervisor
ENDING_EVENTS = ("stalled", "failed", "succeeded", "killed", "lost", "over_budget", "no_change", "gave_up")
QUIET_ENDINGS = frozenset({"succeeded", "killed", "lost"})


class EndingNotice:
    """The run ended as `event` (succeeded, failed, stalled ...): one notice, keyed by the ending."""

    ending = True

    def __init__(self, event: str) -> None:
        self.event = event
        self.default_on = event not in QUIET_ENDINGS

    def keys(self, record: RunRecord) -> list[str]:
        return [self.event] if record.state == self.event else []

    def compose(self, record: RunRecord, key: str) -> tuple[str, str]:
        return pages.ending_notice(record, self.event)


ENDING_NOTICES = tuple(EndingNotice(e) for e in ENDING_EVENTS)


class Ending:
    name = "ending"
    phases = frozenset({CLOSING})
    owns: frozenset[str] = frozenset({"spend", "spiral"})  # the whole log's spend and call count
    notices: tuple[NoticeKind, ...] = ENDING_NOTICES

    def apply(self, p: Pass) -> list[Event]:
        assert p.cached is not None
        record = p.record
        if any(e.kind is Kind.GUIDANCE_RECEIVED for e in p.view.events):  # the case file learns its restarts
            ended = parse_ts(record.ended_at) or p.real_now
            case_file.write_run_case(p.rd, record, RunClock.of(record).at(ended))
        record.spend = spend_of(p.rd, record, p.cached, p.cfg)
        record.spiral.tool_calls = p.cached.detector.calls
        KEPT.drop(p.rd.detector_cache)  # an ended run is not looked at again
        return [of(Kind.SPEND)]
