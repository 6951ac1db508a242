"""A run's timeline as plain data: what the report draws (walk.py fills it, chart.py and page.py draw it).

Every time is in run minutes since launch, on the run's own clock (the demo's fast clock included),
so the x axis reads as `status` and the page do.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from spiral.settings import SIGNAL_NAMES

# call kinds, top to bottom on the chart; a failed call is an error whatever its tool
KINDS = ("errors", "polling", "Bash", "Edit/Write", "Read", "other")


@dataclass(frozen=True, slots=True)
class Call:
    at_min: float
    kind: str  # one of KINDS
    brief: str  # tool and command or path, redacted and cut


@dataclass(frozen=True, slots=True)
class Tick:
    """One verdict of the detector; it holds until the next tick."""

    at_min: float
    suspicion: float
    region: str
    signals: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Mark:
    """A moment to mark on the chart: a page, guidance received, the ending."""

    at_min: float
    label: str
    detail: str = ""


@dataclass
class Timeline:
    id: str
    title: str
    facts: list[str]  # one-line facts for the header (ticket, bucket, agent, ending...)
    bucket: str
    expected_min: float
    soft_start_min: float
    stuck_min: float
    threshold: float
    end_min: float
    calls: list[Call] = field(default_factory=list)
    ticks: list[Tick] = field(default_factory=list)
    pages: list[Mark] = field(default_factory=list)
    guidance: list[Mark] = field(default_factory=list)
    ending: Mark | None = None
    blocked: list[tuple[float, float]] = field(default_factory=list)  # waiting on the model API
    spend: list[tuple[float, int, float | None]] = field(default_factory=list)  # minute, tokens, dollars
    evidence: list[str] = field(default_factory=list)
    evidence_at_min: float | None = None
    last_calls: list[str] = field(default_factory=list)

    @property
    def signals(self) -> dict[str, list[tuple[float, float]]]:
        """Each signal that fired: its on intervals (start, end minute), in the verdicts' signal order."""
        return signal_intervals(self.ticks, self.end_min)

    @property
    def regions(self) -> list[tuple[str, float, float]]:
        """(region, start, end) as the detector judged it: healthy, soft, stuck."""
        return runs_of(((t.at_min, t.region) for t in self.ticks), self.end_min)

    def first_on(self, signal: str) -> float | None:
        spans = self.signals.get(signal)
        return spans[0][0] if spans else None


def runs_of(points: Iterable[tuple[float, str]], end: float) -> list[tuple[str, float, float]]:
    """Consecutive equal values of a step function as (value, start, end)."""
    out: list[tuple[str, float, float]] = []
    for at, value in points:
        if out and out[-1][0] == value:
            continue
        if out:
            out[-1] = (out[-1][0], out[-1][1], at)
        out.append((value, at, end))
    if out:
        out[-1] = (out[-1][0], out[-1][1], max(end, out[-1][1]))
    return out


def signal_intervals(ticks: Sequence[Tick], end: float) -> dict[str, list[tuple[float, float]]]:
    spans: dict[str, list[tuple[float, float]]] = {}
    on: dict[str, float] = {}
    for tick in ticks:
        for name in tick.signals:
            on.setdefault(name, tick.at_min)
        for name in [n for n in on if n not in tick.signals]:
            spans.setdefault(name, []).append((on.pop(name), tick.at_min))
    for name, start in on.items():
        spans.setdefault(name, []).append((start, max(end, start)))
    order = {n: i for i, n in enumerate(SIGNAL_NAMES)}
    return dict(sorted(spans.items(), key=lambda kv: order.get(kv[0], len(order))))


def run_time(blocked: Sequence[tuple[float, float]], agent_ts: float) -> float:
    """The run-clock moment of an agent-clock one: the time blocked on the model API before it put back.

    The inverse of `ts - blocked_before(blocked, ts)`; a moment inside a blocked stretch maps to its end.
    """
    ts = agent_ts
    for start, end in blocked:
        if start >= ts:
            break
        ts += end - start
    return ts
