"""Benchmark arithmetic: confusion counts, timing, attribution, Wilson intervals (pure)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field


def wilson(k: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a proportion k/n (k may be fractional: a mean of rates)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


@dataclass
class Outcome:
    """One detector on one scenario."""

    family: str
    positive: bool
    paged_at: float | None
    onset: float | None
    window: tuple[float, float] | None
    attributed: bool | None = None  # did it name the expected signal (detectors that name signals)

    @property
    def paged(self) -> bool:
        return self.paged_at is not None


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0
    early: int = 0  # positives paged before their window (before the spiral, or before the soft band)
    late: int = 0  # positives paged after their window
    delays: list[float] = field(default_factory=list)  # minutes from onset to page
    attributed: int = 0
    attributable: int = 0
    family_recall: dict[str, float] = field(default_factory=dict)
    family_fpr: dict[str, float] = field(default_factory=dict)
    family_sizes: dict[str, int] = field(default_factory=dict)

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def fpr(self) -> float | None:
        return self.fp / (self.fp + self.tn) if self.fp + self.tn else None

    @property
    def median_delay(self) -> float | None:
        return statistics.median(self.delays) if self.delays else None

    def recall_interval(self) -> tuple[float, float]:
        """Families are the unit: the mean of per-family recall, over the number of families."""
        rates = list(self.family_recall.values())
        return wilson(sum(rates), len(rates))

    def fpr_interval(self) -> tuple[float, float]:
        rates = list(self.family_fpr.values())
        return wilson(sum(rates), len(rates))


def _in_window(at: float | None, window: tuple[float, float] | None) -> bool:
    return at is not None and (window is None or window[0] <= at <= window[1])


def score(outcomes: list[Outcome]) -> Score:
    s = Score()
    by_family: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_family.setdefault(o.family, []).append(o)
        if o.positive:
            if o.paged and o.paged_at is not None and _in_window(o.paged_at, o.window):
                s.tp += 1
                if o.onset is not None:
                    s.delays.append(o.paged_at - o.onset)
                if o.attributed is not None:
                    s.attributable += 1
                    s.attributed += bool(o.attributed)
            else:
                # a page before the window is a false alarm about a spiral not yet there, and
                # one after it comes when the liveness path has already stopped the run
                s.fn += 1
                if o.paged and o.window is not None and o.paged_at is not None:
                    if o.paged_at < o.window[0]:
                        s.early += 1
                    else:
                        s.late += 1
        elif o.paged:
            s.fp += 1
        else:
            s.tn += 1
    for fam, items in by_family.items():
        s.family_sizes[fam] = len(items)
        caught = [o.paged and (not o.positive or _in_window(o.paged_at, o.window)) for o in items]
        rate = sum(caught) / len(items)
        if items[0].positive:
            s.family_recall[fam] = rate
        else:
            s.family_fpr[fam] = rate
    return s
