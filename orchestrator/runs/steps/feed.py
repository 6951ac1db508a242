"""Step: the guidance receipts first, then what the run's files gained, into its kept detector.

A receipt restarts the detector's windows where the message reached the agent, so it is taken
before the calls after it are fed. A run that just ended is fed to the end of its log, and its
verdict on the whole log is taken (the ending's answers read it).
"""

from __future__ import annotations

from orchestrator.notify.kinds import NoticeKind
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord
from orchestrator.record.run_files import read_tracked
from orchestrator.runs import evaluator
from orchestrator.runs.events import Event
from orchestrator.runs.steering import track
from orchestrator.runs.steps.base import CLOSING, LIVE
from orchestrator.runs.steps.context import KEPT, Pass
from spiral.detector import Detector
from spiral.settings import Settings
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


def catch_up(
    rd: RunDir, record: RunRecord, settings: Settings, real_now: float, events: list[Event] | None = None
) -> evaluator.Cached:
    """The run's cached detector, fed what its files gained since the last call.

    Guidance receipts are taken first (into `events` and the record, when given), so the detector's
    windows restart at a receipt before the calls after it are fed."""
    path = rd.detector_cache
    cached = KEPT.obtain(path)
    workdir = record.agent_clone(rd.clone)
    if cached is not None and cached.detector.workdir != workdir:
        # made against another folder (before the run was placed on a node, or under a linked path):
        # the log names its files under this one, and what was read so far is read again against it
        KEPT.discard(path)
        cached = None
    if cached is None:
        det = Detector(
            settings,
            bucket=str(record.bucket),
            started_at=RunClock.of(record).started_at,
            tracked=read_tracked(rd.tracked),
            outputs=list(record.outputs),
            workdir=workdir,
            scope=record.scope,  # the ticket's scope globs (the drift signal); none in older records
        )
        cached = evaluator.fresh(det, str(record.format), workdir, record.model)
    received = len(events) if events is not None else 0
    if record.guidance:
        if events is not None:
            events += track.receipts(rd.guidance, record, cached, real_now)
        else:
            track.register(record, cached)
    before = (cached.events_offset, cached.workspace_offset)
    respent = cached.spend_behind  # a spend part of another version: the log is read again for it
    try:
        evaluator.catch_up(cached, rd)
    except BaseException:
        KEPT.discard(path)  # half fed: the next pass starts again from the file
        raise
    read = cached.events_offset - before[0] + cached.workspace_offset - before[1]
    changed = respent or (events is not None and len(events) > received)
    KEPT.put(path, cached, read=read, changed=changed, dear=respent)
    return cached
