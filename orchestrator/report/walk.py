"""A recorded run walked through the real detector, every verdict kept: the report's data (timeline.py).

The walk is replay's (orchestrator/corpus/replay.py: the same readers, adapter, tick clock and agent
clock), except that it does not stop at the page: a watch that never pages keeps it going to the
end of the recording, so the chart shows what came after (the stuck region, the ending).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.replay import provider_intervals
from orchestrator.ledger import prices
from orchestrator.notify.pages import redact, redact_cut
from orchestrator.record.case import Case
from orchestrator.record.layout import CaseFiles
from orchestrator.record.run_files import LineCounter, distinct_snapshots, read_events, read_snapshots, read_tracked
from orchestrator.report.timeline import KINDS, Call, Tick, Timeline, run_time
from spiral import model
from spiral.adapters import make_adapter
from spiral.detector import Detector
from spiral.model import Snapshot, ToolCall
from spiral.observe import observe
from spiral.outcome import blocked_before
from spiral.settings import Settings
from spiral.spend import SpendCounter
from spiral.verdict import Verdict
from spiral.walk import TickWalk, Watch, drive

LAST_CALLS = 12  # calls listed below the chart


@dataclass
class Walked:
    """What the walk gives the run- or case-specific parts (walk_case, walk_run)."""

    case: Case
    settings: Settings
    timeline: Timeline
    blocked: list[tuple[float, float]] = field(default_factory=list)
    first_page: Verdict | None = None
    last: Verdict | None = None
    strongest: Verdict | None = None

    def minute(self, agent_min: float) -> float:
        """Agent-clock minutes (the detector's) as run minutes."""
        start = self.case.started_at
        return round((run_time(self.blocked, start + agent_min * 60) - start) / 60, 2)


def walk(
    case: Case,
    settings: Settings,
    *,
    end: float | None = None,
    restarts: list[float] | None = None,
    price_overrides: prices.Overrides | None = None,
) -> Walked:
    """Walk the recording of `case` (a case or run folder) to `end` (run clock; default the case's end).

    `restarts` are the guidance receipts on the run clock (default the case's `guidance_received`).
    """
    files = CaseFiles(case.folder)
    end = case.ended_at if end is None else end
    blocked = provider_intervals(files.events)

    def agent(ts: float) -> float:
        return ts - blocked_before(blocked, ts) if blocked else ts

    def on_agent_clock(snap: Snapshot) -> Snapshot:
        snap.ts = agent(snap.ts)
        return snap

    b = settings.bucket(case.bucket)
    tl = Timeline(
        id=case.id,
        title=case.id,
        facts=[],
        bucket=case.bucket,
        expected_min=b.expected_min,
        soft_start_min=b.soft_start_min,
        stuck_min=b.stuck_min,
        threshold=settings.threshold,
        end_min=round((end - case.started_at) / 60, 2),
    )
    counter = LineCounter()
    detector = Detector(
        settings,
        bucket=case.bucket,
        started_at=case.started_at,
        tracked=read_tracked(files.tracked),
        outputs=case.outputs,
        workdir=case.workdir,
        scope=case.scope,
    )
    for at in restarts if restarts is not None else case.guidance_received:
        detector.restart(agent(at))
    snaps: Iterator[Snapshot] = map(on_agent_clock, distinct_snapshots(read_snapshots(files.workspace, counter)))
    tick_s = settings.tick_s or 30.0
    tw = TickWalk(case.started_at, agent(end), tick_s, detector, snaps)
    every = Watch(keep_all=True)  # every verdict, never stopping the walk
    tw.watches.append(every)
    calls: list[tuple[float, ToolCall]] = []
    spend = _SpendSampler(case.format, case.started_at, tick_s, price_overrides or {})
    adapter = make_adapter(case.format, case.workdir)

    def to_calls(ts: float, data: Any) -> list[ToolCall]:
        spend.feed(ts, data)
        out = adapter.feed(ts, data)
        calls.extend((ts, c) for c in out)
        return out

    drive(tw, ((agent(ts), data) for ts, data in read_events(files.events, counter)), to_calls)
    spend.close()
    w = Walked(case, settings, tl, blocked, every.first_page, every.last, every.strongest)
    tl.ticks = [Tick(w.minute(v.elapsed_min), v.suspicion, v.region, v.signals) for v in every.verdicts]
    tl.blocked = [(round((s - case.started_at) / 60, 2), round((e - case.started_at) / 60, 2)) for s, e in blocked]
    tl.spend = [(w.minute(m), tokens, usd) for m, tokens, usd in spend.points]
    tl.calls = [
        Call(w.minute((ts - case.started_at) / 60), _kind(c, case.workdir, settings), _brief(c)) for ts, c in calls
    ]
    tl.last_calls = [f"{c.at_min:6.1f} min  {c.brief}" for c in tl.calls[-LAST_CALLS:]]
    shown = w.first_page or w.strongest or w.last
    if shown is not None:
        tl.evidence = [redact_cut(e) for e in shown.evidence]  # a path in the evidence may hold a token
        tl.evidence_at_min = w.minute(shown.elapsed_min)
    return w


class _SpendSampler:
    """Tokens and dollars as the log reported them, one point per tick at most (the last of each);
    minutes on the clock it is fed (the agent's)."""

    def __init__(self, fmt: str, started: float, tick_s: float, overrides: prices.Overrides) -> None:
        self.counter = SpendCounter(fmt)
        self._feed = self.counter.feeder()  # the format's line function, chosen once
        self.started, self.tick_s, self.overrides = started, tick_s, overrides
        self.memo: dict[str, prices.Rates | None] = {}
        self.points: list[tuple[float, int, float | None]] = []
        self._slot = -1
        self._last_ts: float | None = None
        self._key: tuple[object, ...] | None = None

    def feed(self, ts: float, data: Any) -> None:
        slot = math.floor((ts - self.started) / self.tick_s)
        if slot != self._slot and self._last_ts is not None:
            self._sample(self._last_ts)
        self._slot = slot
        self._feed(data)
        self._last_ts = ts

    def close(self) -> None:
        if self._last_ts is not None:
            self._sample(self._last_ts)

    def _sample(self, ts: float) -> None:
        sp = self.counter.spend
        if not sp.tokens and not sp.reported:
            return
        key = (sp.tokens, sp.unattributed_usd, tuple(sorted(sp.reported.items())))
        if key == self._key:  # nothing new to price (a result line's bill is new, with no new tokens)
            return
        self._key = key
        usd, _ = prices.cost(sp, self.overrides, self.memo)
        self.points.append((round((ts - self.started) / 60, 2), sp.tokens, usd))


def _kind(call: ToolCall, workdir: str | None, settings: Settings) -> str:
    if call.is_error or call.denied:
        return KINDS[0]
    if call.tool in (model.BASH, model.BASH_OUTPUT) and observe(call, workdir, settings.poll_max_sleep_s).poll:
        return "polling"
    if call.tool == model.BASH:
        return "Bash"
    if call.tool in model.WRITING_TOOLS:
        return "Edit/Write"
    if call.tool == model.READ:
        return "Read"
    return "other"


def _brief(call: ToolCall) -> str:
    what = " ".join(redact((call.command or call.path or "")[:8192]).split())
    if len(what) > 150:
        what = what[:147] + "..."
    mark = " [denied]" if call.denied else " [error]" if call.is_error else ""
    return f"{call.tool} {what}".rstrip() + mark


def case_settings(case: Case, buckets: BucketsFile) -> Settings:
    return buckets.with_overrides(case.overrides, case.source, case.lines, ("overrides",))
