"""A live run's log taken in: calls held until decided, then given to the detector on the agent's clock (pure).

The live evaluator (orchestrator/runs/evaluator.py) reads what a run's files gained and hands the
lines here. Each line goes to the spend counter it passes in, to the run's `Outcome` (provider
episodes, the final record) and to the log adapter; the calls it yields are merged in time order
with the clone's snapshots (a snapshot after the calls of its time) and held in `pending` until
they are decided: a call waits for its result (a call the agent's permission layer denied is not
evidence that anything ran) or for HOLD_S of log time without one. Decided items reach the
detector with their time moved onto the agent's clock: time spent waiting on the model API is cut
out, so an outage is never a mutation stall.

This is the loop of every pass over every live line, so it is compiled with the detector
(setup.py); the reading of the files stays with the caller.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from mypy_extensions import mypyc_attr

from spiral.adapters.base import Adapter
from spiral.model import Snapshot, ToolCall
from spiral.outcome import Outcome, blocked_before

RECENT = 5  # tool calls kept for the page's "last tool calls"
FOLLOWERS = 3  # calls kept after a guidance receipt: what the agent did next
HOLD_S = 60.0  # run-clock seconds a call waits for its result before it counts anyway

# a call as the page may show it: (tool, first 8192 characters of its command or path, is_error),
# made into the page's redacted line only when a page needs it (redacting every call would cost more
# than the pass)
Excerpt = tuple[str, str, bool]


def excerpt(call: ToolCall) -> Excerpt:
    return call.tool, (call.command or call.path or "")[:8192], call.is_error


def agent_time(outcome: Outcome, ts: float) -> float:
    """`ts` on the agent's clock: run time less the time blocked on the provider before it."""
    if not outcome.episodes:
        return ts
    return ts - blocked_before(outcome.blocked_intervals(ts), ts)


class Sink(Protocol):
    """What the decided items go to: the run's Detector (a test may stand in for it and watch)."""

    def add_call(self, call: ToolCall) -> None: ...

    def add_snapshot(self, snap: Snapshot) -> None: ...

    def restart(self, at: float) -> None: ...


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class Intake:
    def __init__(self) -> None:
        # calls (and the snapshots after them) read but not yet given to the detector, in time order
        self.pending: list[ToolCall | Snapshot] = []
        self.recent: deque[Excerpt] = deque(maxlen=RECENT)
        self.denied_calls = 0
        self.last_ts = 0.0
        # each guidance receipt the detector restarted at (agent time), with the first calls after it
        # (run time, agent time, first calls)
        self.followers: list[tuple[float, float, list[Excerpt]]] = []

    def take(
        self,
        events: Iterable[tuple[float, Any]],
        snaps: Iterator[Snapshot],
        adapter: Adapter,
        outcome: Outcome,
        detector: Sink,
        spend: Callable[[Any], None] | None,
    ) -> None:
        """Every (time, native line) of `events` and every snapshot of `snaps`, merged in time order;
        what is decided goes to the detector as it is read, so a first pass holds only the undecided."""
        pending = self.pending
        nxt = next(snaps, None)
        last_ts = self.last_ts
        for ts, data in events:
            if ts > last_ts:
                self.last_ts = last_ts = ts
            if spend is not None:
                spend(data)
            outcome.feed(ts, data)
            calls = adapter.feed(ts, data)
            if not calls:
                continue
            for call in calls:
                while nxt is not None and nxt.ts < call.ts:
                    pending.append(nxt)
                    nxt = next(snaps, None)
                pending.append(call)
            self.release(detector, outcome, False)
        while nxt is not None:
            pending.append(nxt)
            nxt = next(snaps, None)
        self.release(detector, outcome, False)

    def release(self, det: Sink, outcome: Outcome, final: bool) -> None:
        """Give the detector what is decided: everything up to the first call still waiting for its result
        (`final`: everything, the run ended)."""
        pending = self.pending
        out = 0
        for item in pending:
            if isinstance(item, Snapshot):
                item.ts = agent_time(outcome, item.ts)
                det.add_snapshot(item)
            else:
                if not item.result_seen and not final and self.last_ts - item.ts < HOLD_S:
                    break
                if item.denied:
                    self.denied_calls += 1
                else:
                    self.recent.append(excerpt(item))
                    item.ts = agent_time(outcome, item.ts)
                    det.add_call(item)
                    if self.followers:
                        _, at, first = self.followers[-1]
                        if item.ts >= at and len(first) < FOLLOWERS:
                            first.append(excerpt(item))
            out += 1
        if out:
            del pending[:out]

    def restart_at(self, det: Sink, key: float, agent_at: float) -> None:
        """Guidance reached the agent (at run time `key`; `agent_at` on the agent's clock): the detector's
        windows start again there, and the calls after it are kept for the receipt."""
        if any(raw == key for raw, _, _ in self.followers):
            return
        det.restart(agent_at)
        self.followers.append((key, agent_at, []))

    def followers_of(self, key: float) -> list[Excerpt] | None:
        """The first calls after the receipt `key` (None: not restarted there)."""
        for raw, _, first in self.followers:
            if raw == key:
                return first
        return None
