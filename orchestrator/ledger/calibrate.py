"""Bucket timings from real runs: what successful runs took, and what that implies.

Rule (documented in README): over the runs of a bucket that succeeded,
expected = the median wall-clock; the soft band starts at the larger of
1.5 x expected and the 90th percentile; stuck is the larger of 1.2 x the
soft-band start and the longest successful run, so that no run that
succeeded would have been stopped. Minutes are rounded up. The same rule
gives the bands in tool calls (expected_calls, soft_start_calls,
stuck_calls) from the runs' call counts.

The runs come from the ledger (`calibrate`) or from a folder of recorded
cases (`calibrate_cases`, calibrate_cases.py). Everything here is pure
except those two (they read) and `apply` (rewrites buckets.yaml).
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
    "SELECT bucket, wall_min, tool_calls FROM runs WHERE state = 'succeeded' AND wall_min > 0 "
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
    calls: tuple[float, float, int] | None = None  # the runs' median, p90 and most tool calls, when known

    @property
    def refused(self) -> bool:
        return self.proposed is None


def _bands(xs: list[float]) -> tuple[int, int, int]:
    """(expected, soft-band start, stuck) of one bucket's runs, by the rule above."""
    med, p90, longest = percentile(xs, 50), percentile(xs, 90), max(xs)
    expected = max(1, math.ceil(med))
    soft = max(expected, math.ceil(max(1.5 * med, p90)))
    return expected, soft, max(soft, math.ceil(max(1.2 * soft, longest)))


def propose(
    walls: dict[str, list[float]],
    current: dict[str, Bucket],
    min_runs: int,
    calls: dict[str, list[int]] | None = None,
) -> list[Proposal]:
    """Per bucket, the bands its succeeded runs imply; with `calls` (each run's tool calls, in the same
    order as its minutes) the bands in calls too."""
    out = []
    for name in BUCKET_NAMES:
        xs = [w for w in walls.get(name, []) if w is not None and w > 0]
        if not xs:
            out.append(Proposal(name, 0, 0.0, 0.0, 0.0, None, current[name]))
            continue
        med, p90, longest = percentile(xs, 50), percentile(xs, 90), max(xs)
        ns = [n for n in (calls or {}).get(name, []) if n is not None and n > 0]
        spread = (
            (percentile([float(n) for n in ns], 50), percentile([float(n) for n in ns], 90), max(ns)) if ns else None
        )
        proposed = bucket_from(xs, ns, min_runs)
        out.append(Proposal(name, len(xs), med, p90, longest, proposed, current[name], spread))
    return out


def bucket_from(minutes: list[float], calls: list[int], min_runs: int) -> Bucket | None:
    """One bucket's bands from its succeeded runs' minutes and tool calls (the calls bands only when
    `min_runs` runs have a count), or None with fewer than `min_runs` runs."""
    if len([m for m in minutes if m > 0]) < min_runs:
        return None
    expected, soft, stuck = _bands([m for m in minutes if m > 0])
    counted = [float(n) for n in calls if n > 0]
    by_calls = _bands(counted) if len(counted) >= min_runs else (0, 0, 0)
    return Bucket(float(expected), float(soft), float(stuck), *by_calls)


def walls_by_bucket(rows: Iterable[tuple[Any, ...]]) -> tuple[dict[str, list[float]], dict[str, list[int]]]:
    """(bucket, wall_min[, tool_calls]) rows, as the ledger returns them: minutes and calls by bucket."""
    walls: dict[str, list[float]] = {}
    calls: dict[str, list[int]] = {}
    for row in rows:
        bucket, wall = row[0], row[1]
        walls.setdefault(bucket, []).append(float(wall))
        n = row[2] if len(row) > 2 else None
        calls.setdefault(bucket, []).append(int(n) if isinstance(n, (int, float)) else 0)
    return walls, calls


@dataclass(frozen=True)
class Calibration:
    """What `calibrate` shows: one proposal per bucket, and the rule's minimum run count; from the
    ledger, also the rules of the judged pages with their false alarms (ledger/pages.py)."""

    min_runs: int
    proposals: list[Proposal]
    false_alarms: list[dict[str, Any]] | None = None  # [{rule, false_alarms, judged}]; None: not read (--cases)

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
                    **(
                        {"median_calls": p.calls[0], "p90_calls": p.calls[1], "most_calls": p.calls[2]}
                        if p.calls is not None
                        else {}
                    ),
                    "refused": p.refused,
                    "current": p.current.timings(),
                    "proposed": None if p.proposed is None else p.proposed.timings(),
                }
                for p in self.proposals
            ],
            "false_alarms_by_rule": self.false_alarms,
        }


def calibrate(buckets: BucketsFile, prices: dict[str, tuple[float, float, float, float]], min_runs: int) -> Calibration:
    """Refresh the ledger, then propose timings from its succeeded runs; with them, the rules behind
    the false alarms people reported (`feedback`)."""
    from orchestrator.ledger import queries, store
    from orchestrator.ledger.pages import page_precision

    store.refresh(prices)
    _, rows = queries.run_sql(SUCCEEDED_WALLS_SQL)
    walls, calls = walls_by_bucket(rows)
    alarms = page_precision().false_alarms_by_rule()
    return Calibration(min_runs, propose(walls, buckets.settings.buckets, min_runs, calls), alarms)


def calibrate_cases(buckets: BucketsFile, dirs: list[Path], min_runs: int) -> Calibration:
    """The same proposal from a folder of recorded cases (the runs that succeeded: calibrate_cases.py)."""
    from orchestrator.ledger.calibrate_cases import runs_in

    runs = runs_in(dirs)
    walls = {b: [m for m, _ in rs] for b, rs in runs.items()}
    calls = {b: [n for _, n in rs] for b, rs in runs.items()}
    return Calibration(min_runs, propose(walls, buckets.settings.buckets, min_runs, calls))


def apply(calibration: Calibration, path: Path) -> None:
    """Write the accepted proposals into buckets.yaml at `path` (comments kept)."""
    from orchestrator.buckets import write_buckets

    if not calibration.accepted:
        raise UserError(f"no bucket has {calibration.min_runs} succeeded runs yet; nothing written")
    write_buckets(path, calibration.accepted)
