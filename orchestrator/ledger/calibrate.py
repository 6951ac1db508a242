"""Bucket timings from real runs: what successful runs took, and what that implies (pure).

Rule (documented in README): over the runs of a bucket that succeeded,
expected = the median wall-clock; the soft band starts at the larger of
1.5 x expected and the 90th percentile; stuck is the larger of 1.2 x the
soft-band start and the longest successful run, so that no run that
succeeded would have been stopped. Minutes are rounded up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spiral.settings import BUCKET_NAMES, Bucket


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of a non-empty list."""
    xs = sorted(values)
    if len(xs) == 1:
        return xs[0]
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class Proposal:
    bucket: str
    runs: int
    median: float
    p90: float
    longest: float
    proposed: Bucket | None  # None when there are too few runs
    current: Bucket

    @property
    def refused(self) -> bool:
        return self.proposed is None


def propose(walls: dict[str, list[float]], current: dict[str, Bucket], min_runs: int) -> list[Proposal]:
    out = []
    for name in BUCKET_NAMES:
        xs = [w for w in walls.get(name, []) if w is not None and w > 0]
        if not xs:
            out.append(Proposal(name, 0, 0.0, 0.0, 0.0, None, current[name]))
            continue
        med, p90, longest = percentile(xs, 50), percentile(xs, 90), max(xs)
        proposed = None
        if len(xs) >= min_runs:
            expected = math.ceil(med)
            soft = math.ceil(max(1.5 * med, p90))
            stuck = math.ceil(max(1.2 * soft, longest))
            proposed = Bucket(float(expected), float(soft), float(max(stuck, soft)))
        out.append(Proposal(name, len(xs), med, p90, longest, proposed, current[name]))
    return out
