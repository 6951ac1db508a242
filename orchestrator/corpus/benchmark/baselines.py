"""The simple alternatives people would otherwise use, run on the same scenarios (pure).

Each takes the run's tool calls (with times) and its timing, and returns the
elapsed minute at which it would have alerted, or None.
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from spiral import model
from spiral.model import ToolCall


@dataclass(frozen=True)
class RunShape:
    started_at: float
    ended_at: float
    stuck_min: float
    calls: Sequence[ToolCall]

    def minute(self, ts: float) -> float:
        return round((ts - self.started_at) / 60.0, 2)


Baseline = Callable[[RunShape], float | None]


def heartbeat(limit_s: float = 1800.0) -> Baseline:
    """Alert when the log has been silent for `limit_s` (the liveness check most setups have)."""

    def run(r: RunShape) -> float | None:
        last = r.started_at
        for c in r.calls:
            if c.ts - last >= limit_s:
                return r.minute(last + limit_s)
            last = c.ts
        return r.minute(last + limit_s) if r.ended_at - last >= limit_s else None

    return run


def wall_clock_cap() -> Baseline:
    """Alert when the run passes its bucket's stuck time."""

    def run(r: RunShape) -> float | None:
        return r.stuck_min if (r.ended_at - r.started_at) / 60.0 >= r.stuck_min else None

    return run


def step_cap(n: int) -> Baseline:
    """Alert at the n-th tool call."""

    def run(r: RunShape) -> float | None:
        return r.minute(r.calls[n - 1].ts) if len(r.calls) >= n else None

    return run


def _identity(c: ToolCall) -> tuple[str, str]:
    if c.tool == model.BASH:
        return c.tool, c.command or ""
    return c.tool, c.path or c.command or ""


def consecutive_repeats(k: int) -> Baseline:
    """Alert when the same call (tool and exact command or path) comes k times in a row."""

    def run(r: RunShape) -> float | None:
        prev, streak = None, 0
        for c in r.calls:
            ident = _identity(c)
            streak = streak + 1 if ident == prev else 1
            prev = ident
            if streak >= k:
                return r.minute(c.ts)
        return None

    return run


def identical_results(k: int, within: int = 10) -> Baseline:
    """Alert when the same call came back with the same result k times among the last `within` calls
    (the stuck check agent frameworks build in: the same action and observation again)."""

    def run(r: RunShape) -> float | None:
        recent: list[tuple[str, str, bool, str]] = []
        for c in r.calls:
            recent.append((*_identity(c), c.is_error, c.output_ends or ""))
            if len(recent) > within:
                recent.pop(0)
            if recent.count(recent[-1]) >= k:
                return r.minute(c.ts)
        return None

    return run


def random_pager(rate: float, seed: str) -> Baseline:
    """Pages a run with probability `rate`, at a uniformly random moment of it (seeded per run)."""

    def run(r: RunShape) -> float | None:
        rng = random.Random(zlib.crc32(f"{seed}:{r.started_at}:{len(r.calls)}".encode()))
        if rng.random() >= rate:
            return None
        return round(rng.uniform(0, (r.ended_at - r.started_at) / 60.0), 2)

    return run


BASELINES: dict[str, Baseline] = {
    "heartbeat (30 min silence)": heartbeat(),
    "wall-clock cap at stuck time": wall_clock_cap(),
    "step cap 100 calls": step_cap(100),
    "step cap 200 calls": step_cap(200),
    "step cap 400 calls": step_cap(400),
    "3 identical calls in a row": consecutive_repeats(3),
    "5 identical calls in a row": consecutive_repeats(5),
}
