"""Bucket timings from real runs: what successful runs took, and what that implies.

Rule (documented in README): over the runs of a bucket that succeeded,
expected = the median wall-clock; the soft band starts at the larger of
1.5 x expected and the 90th percentile; stuck is the larger of 1.2 x the
soft-band start and the longest successful run, so that no run that
succeeded would have been stopped. Minutes are rounded up.

Everything here is pure except `calibrate` (reads the ledger) and `apply`
(rewrites buckets.yaml).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.infra.errors import UserError
from spiral.settings import BUCKET_NAMES, Bucket

if TYPE_CHECKING:
    from orchestrator.buckets import BucketsFile

# demo re-enactments run on a fast clock over recorded work: they say nothing about real timings
SUCCEEDED_WALLS_SQL = (
    "SELECT bucket, wall_min FROM runs WHERE state = 'succeeded' AND wall_min > 0 "
    "AND agent IS DISTINCT FROM 'demo' AND coalesce(time_scale, 1) = 1"
)


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


def walls_by_bucket(rows: Iterable[tuple[Any, ...]]) -> dict[str, list[float]]:
    """(bucket, wall_min) rows, as the ledger returns them, grouped by bucket."""
    walls: dict[str, list[float]] = {}
    for bucket, wall in rows:
        walls.setdefault(bucket, []).append(float(wall))
    return walls


def _timings(b: Bucket) -> dict[str, float]:
    return {"expected_min": b.expected_min, "soft_start_min": b.soft_start_min, "stuck_min": b.stuck_min}


@dataclass(frozen=True)
class Calibration:
    """What `calibrate` shows: one proposal per bucket, and the rule's minimum run count."""

    min_runs: int
    proposals: list[Proposal]

    @property
    def accepted(self) -> dict[str, Bucket]:
        return {p.bucket: p.proposed for p in self.proposals if p.proposed is not None}

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_runs": self.min_runs,
            "buckets": [
                {
                    "bucket": p.bucket,
                    "runs": p.runs,
                    "median_min": round(p.median, 2),
                    "p90_min": round(p.p90, 2),
                    "longest_min": round(p.longest, 2),
                    "refused": p.refused,
                    "current": _timings(p.current),
                    "proposed": None if p.proposed is None else _timings(p.proposed),
                }
                for p in self.proposals
            ],
        }


def calibrate(buckets: BucketsFile, prices: dict[str, tuple[float, float, float, float]], min_runs: int) -> Calibration:
    """Refresh the ledger, then propose timings from its succeeded runs."""
    from orchestrator.ledger import store

    store.refresh(prices)
    _, rows = store.run_sql(SUCCEEDED_WALLS_SQL)
    return Calibration(min_runs, propose(walls_by_bucket(rows), buckets.settings.buckets, min_runs))


def apply(calibration: Calibration, path: Path) -> None:
    """Write the accepted proposals into buckets.yaml at `path` (comments kept)."""
    from orchestrator.buckets import write_buckets

    if not calibration.accepted:
        raise UserError(f"no bucket has {calibration.min_runs} succeeded runs yet; nothing written")
    write_buckets(path, calibration.accepted)
