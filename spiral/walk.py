"""The replay clock: a detector walked over a recording tick by tick, and what its verdicts came to (pure).

A recording's calls are fed in time order; between them the walk evaluates the ticks a live
watcher would have evaluated, skipping those that could only repeat the previous verdict. Replay,
eval, the detection benchmark and the report all walk this way (orchestrator/corpus/replay.py sets
a walk up from a case's files).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from mypy_extensions import mypyc_attr

from spiral.detector import Detector
from spiral.model import Snapshot, ToolCall
from spiral.signals import mutation_stall
from spiral.verdict import Finding, Verdict

# the live watcher's wake (orchestrator/runs/wake.py takes these): a run's files still this long...
WAKE_SETTLE_S = 0.2
WAKE_MAX_SETTLE_S = 1.0  # ...or a burst of writing this long, and wakes at least this far apart:
WAKE_GAP_S = 0.5


def drive(
    walk: TickWalk,
    timeline: Iterable[tuple[float, Any]],
    to_calls: Callable[[float, Any], list[ToolCall]] | None = None,
) -> TickWalk:
    """Feed the log in order, evaluating every tick that sees all calls before it.

    `timeline` holds (time, native payload) turned into calls by `to_calls`,
    or (time, calls) already when `to_calls` is None. Where the walk stopped
    is kept, for `resume`. An item dated more than a tick after the
    recording's end (a clock that jumped, a forged or garbled timestamp)
    cannot have happened in it: it is skipped and counted (`beyond_end`),
    and the items after it are still fed. Walking the clock to it would end
    the walk there and leave the rest of the recording unread. (Within a
    tick of the end, a last result written as the agent exited, it is fed.)

    With `rules.wake`, the walk also evaluates when the live watcher would wake
    on the run's log growing (orchestrator/runs/wake.py): once the log has been
    still for `WAKE_SETTLE_S` after an item that brought calls (at most
    `WAKE_MAX_SETTLE_S` into a burst), and never sooner than `WAKE_GAP_S` after
    the previous wake. So a loop that shows between two ticks and is gone by the
    next is seen in replay as the watcher sees it live.
    """
    add_call = walk.detector.add_call
    rest = walk.rest = iter(timeline)
    walk.to_calls, walk.pending = to_calls, None
    last = walk.ended + walk.tick_s
    wakes = walk.detector.settings.rules.wake
    for ts, item in rest:
        if ts > last:
            walk.beyond_end += 1
            continue
        if walk.wake_at is not None and ts >= walk.wake_at:
            walk.wake()
        if ts > walk.now and not walk.done:
            walk.advance(ts)
        if walk.done:
            walk.pending = ts, item
            break
        calls = to_calls(ts, item) if to_calls is not None else item
        for call in calls:
            add_call(call)
        if wakes and calls:
            walk.wake_due(ts)
    if walk.wake_at is not None:
        walk.wake()
    walk.advance(math.inf)
    return walk


def resume(walk: TickWalk, views: Sequence[Mapping[str, float]]) -> list[Watch]:
    """Walk on past the page for `views`: each the same detector with those signals' weights instead.

    Each weight must be between 0 and the detector's own, so no view can page
    before the walk did, and until then each saw what the walk saw (the same
    findings, so the same signals fired). A view knows when it paged and what
    had fired by then; its `strongest` and `first_tripped` cover the ticks from the walk's page on only.
    """
    own = walk.detector.settings.weights
    if any(not 0 <= w <= own[name] for view in views for name, w in view.items()):
        raise ValueError("a view's weight is negative or above the detector's own")
    out = [Watch(view) for view in views]
    for w in out:
        w.fired, w.first_fired = set(walk.fired), dict(walk.first_fired)
        if walk.notified is not None:
            w.see(walk.notified)
    live = [w for w in out if not w.stopped]
    if walk.notified is None or not live:
        return out  # the recording ended unpaged, or every view paged with the walk
    walk.watches, walk.done = live, False
    drive(walk, itertools.chain([walk.pending] if walk.pending else [], walk.rest), walk.to_calls)
    return out


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class Watch:
    """What a walk's verdicts came to, up to the first that pages (then it stops looking).

    With `weights`, each verdict is read as the same detector with those
    signals' weights would have given it: the findings are the same (a weight
    only scales its finding) and the suspicion is their weights' sum, as
    `Detector.evaluate` adds it. So one walk serves the weight ablations too (`resume`).

    With `keep_all`, every verdict is kept (`verdicts`) and the watch never stops: it never counts
    as paged, so the walk goes on to the recording's end (the report's chart); `first_page` is
    the first verdict that paged.
    """

    def __init__(self, weights: Mapping[str, float] | None = None, keep_all: bool = False) -> None:
        self.weights = dict(weights) if weights else None
        self.keep_all = keep_all
        self.verdicts: list[Verdict] = []
        self.first_page: Verdict | None = None
        self.stopped = False  # it paged
        self.fired: set[str] = set()
        self.first_fired: dict[str, float] = {}  # signal -> elapsed minute it first fired
        self.first_tripped: float | None = None  # elapsed minute suspicion first reached the threshold, any band
        self.notified: Verdict | None = None
        self.strongest: Verdict | None = None
        self.last: Verdict | None = None

    def see(self, v: Verdict) -> None:
        if v.findings:
            if self.weights is not None:
                v = _reweighted(v, self.weights)
            for name in v.signals:
                if name not in self.fired:
                    self.fired.add(name)
                    self.first_fired[name] = round(v.elapsed_min, 2)
        self.last = v
        if v.tripped and self.first_tripped is None:
            self.first_tripped = round(v.elapsed_min, 2)
        if self.strongest is None or v.suspicion > self.strongest.suspicion:
            self.strongest = v
        if v.should_page:
            self.notified = v
            self.stopped = True
        if self.keep_all:
            self.stopped = False
            self.verdicts.append(v)
            if v.should_page and self.first_page is None:
                self.first_page = v


def _reweighted(v: Verdict, weights: dict[str, float]) -> Verdict:
    findings = tuple(
        Finding(f.signal, weights[f.signal], f.evidence, f.target, f.since, f.attempts) if f.signal in weights else f
        for f in v.findings
    )
    total = sum(f.weight for f in findings)
    # the hold needs loop evidence (every signal but the mutation_stall timer) at the threshold: a view
    # whose weights leave too little of it does not sustain (spiral/sustained.py)
    loop = sum(f.weight for f in findings if f.signal != mutation_stall.NAME)
    sustained = v.sustained if loop >= v.threshold else None
    return Verdict(v.elapsed_min, v.expected_min, v.region, findings, total, v.threshold, sustained)


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class TickWalk(Watch):
    """The replay clock: ticks from launch to the end of the recording.

    Ticks that could only repeat the previous verdict (no new input, no time
    threshold crossed) are skipped; the verdicts that matter are the same.
    Snapshots are taken from their iterable one ahead of the clock, never all
    at once. The walk ends at the page (or when every watch has paged, `resume`).
    """

    def __init__(
        self, started: float, ended: float, tick_s: float, detector: Detector, snaps: Iterable[Snapshot]
    ) -> None:
        self.started, self.ended, self.tick_s = started, ended, tick_s
        self.detector = detector
        self._snaps = iter(snaps)
        self._next: Snapshot | None = next(self._snaps, None)
        self.k = 0
        self.now = started
        self.done = False
        super().__init__()  # the walk watches its own verdicts
        self.watches: list[Watch] = [self]
        self.rest: Iterator[tuple[float, Any]] = iter(())  # the timeline not yet fed (drive), and its converter
        self.to_calls: Callable[[float, Any], list[ToolCall]] | None = None
        self.pending: tuple[float, Any] | None = None  # the timeline item drive took but did not feed
        self.beyond_end = 0  # timeline items dated more than a tick after the recording's end, skipped (drive)
        self.wake_at: float | None = None  # when the waking watcher would next evaluate (rules.wake)
        self._burst_at: float | None = None  # when the writing it waits out began
        self._woke_at = -math.inf

    def wake_due(self, ts: float) -> None:
        """An item with calls came at `ts`: the watcher wakes once the log is still, or the burst long."""
        if self._burst_at is None:
            self._burst_at = ts
        still = max(ts + WAKE_SETTLE_S, self._woke_at + WAKE_GAP_S)
        self.wake_at = min(still, max(self._burst_at + WAKE_MAX_SETTLE_S, self._woke_at + WAKE_GAP_S))

    def wake(self) -> None:
        """Evaluate at the due wake, after the ticks before it, unless the walk is done or past the end."""
        at, self.wake_at, self._burst_at = self.wake_at, None, None
        if at is None or self.done or at > self.ended:
            return
        if at > self.now:
            self.advance(at)  # the ticks before the wake come first
            if self.done:
                return
        self._woke_at = at
        self._snapshots_to(at)
        self._see(self.detector.evaluate(at))

    def _snapshots_to(self, at: float) -> Snapshot | None:
        """Give the detector every snapshot taken by `at`; the next one, or None."""
        nxt = self._next
        while nxt is not None and nxt.ts <= at:
            self.detector.add_snapshot(nxt)
            nxt = next(self._snaps, None)
        self._next = nxt
        return nxt

    def _see(self, v: Verdict) -> bool:
        """Show every live watch the verdict; whether any still looks (else the walk is done)."""
        live = False
        for w in self.watches:
            if not w.stopped:
                w.see(v)
                live = live or not w.stopped
        if not live:
            self.done = True
        return live

    def advance(self, until: float) -> None:
        """Evaluate ticks while they come before `until` (the next event's time)."""
        det = self.detector
        while not self.done and self.now < until:
            if self.now > self.ended:
                self.done = True
                return
            nxt = self._snapshots_to(self.now)
            live = self._see(det.evaluate(self.now))
            change = min(det.next_change_after(self.now), until, nxt.ts if nxt is not None else math.inf)
            if change == math.inf:
                k = int((self.ended - self.started) // self.tick_s)  # jump to the last tick
            else:
                k = math.ceil((change - self.started) / self.tick_s - 1e-9)
            self.k = max(self.k + 1, k)
            self.now = self.started + self.k * self.tick_s  # the next tick, also after a page (`resume` walks on)
            if not live:
                self.done = True
                return
