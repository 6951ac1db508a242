"""Seeded scenario families: each writes corpus-format cases with labels.

A family is one kind of run (a spiral pattern or a hard negative); each of
its scenarios varies the bucket, the log format, the timings and the noise,
deterministically from (family, index). Labels go into `scenario.json`
beside `case.yaml`: must it page, which signal should, and from when.
"""

from __future__ import annotations

import json
import random
import zlib
from pathlib import Path
from typing import Any

from orchestrator.corpus.behaviours import repo
from orchestrator.corpus.benchmark import hard_negatives, negatives_rules, spirals, spirals_rules
from orchestrator.corpus.benchmark.registry import Family
from orchestrator.corpus.timeline import Timeline
from spiral.adapters import FORMATS
from spiral.settings import Settings

__all__ = ["FAMILIES", "Family", "generate", "scenario_id", "script", "write_meta", "write_scenario"]

# spirals first, each in definition order: this is the order of the benchmark's report
FAMILIES: list[Family] = [
    *spirals.FAMILIES,
    *spirals_rules.FAMILIES,
    *hard_negatives.FAMILIES,
    *negatives_rules.FAMILIES,
]


def scenario_id(fam: Family, i: int) -> str:
    return f"{fam.name}-{i:03d}"


def write_scenario(fam: Family, i: int, out: Path, seed: int = 0, settings: Settings | None = None) -> Path:
    """One scenario, timed against the buckets of `settings` (default: the built-in timings)."""
    tl, end, meta = script(fam, i, seed, settings)
    folder = out / tl.case_id
    tl.write_case(folder, end)
    write_meta(folder, meta)
    return folder


def script(
    fam: Family, i: int, seed: int = 0, settings: Settings | None = None
) -> tuple[Timeline, float, dict[str, Any]]:
    """One scenario, scripted (not yet rendered): its timeline, the minute its recording ends, its labels."""
    rng = random.Random(zlib.crc32(f"{seed}:{fam.name}:{i}".encode()))
    bucket = ("small", "medium", "big")[i % 3]
    fmt = FORMATS[(i // 3) % len(FORMATS)]
    b = (settings or _default_settings()).bucket(bucket)
    expected, soft, stuck = b.expected_min, b.soft_start_min, b.stuck_min
    tl = Timeline(
        scenario_id(fam, i), fmt, bucket, f"{fam.description} (benchmark family {fam.name})", repo(), realistic=True
    )
    built = fam.build(tl, rng, expected, soft, stuck)
    labels, end = built if isinstance(built, tuple) else (built, stuck + 3)
    tl.expect = {"spiral": labels.must_page}
    if labels.window:
        tl.expect.update(notify_after_min=labels.window[0], notify_before_min=labels.window[1])
    if labels.signal:
        tl.expect["signals"] = [labels.signal]
    meta = {
        "family": fam.name,
        "positive": fam.positive,
        "must_page": labels.must_page,
        "signal": labels.signal,
        "onset_min": labels.onset_min,
        "window": list(labels.window) if labels.window else None,
        "bucket": bucket,
        "format": fmt,
    }
    return tl, end, meta


def write_meta(folder: Path, meta: dict[str, Any]) -> None:
    """The labels, beside case.yaml."""
    (folder / "scenario.json").write_text(json.dumps(meta, indent=1) + "\n")


def generate(
    out: Path, per_family: int, seed: int = 0, families: list[str] | None = None, settings: Settings | None = None
) -> list[Path]:
    chosen = [f for f in FAMILIES if not families or f.name in families]
    return [write_scenario(f, i, out, seed, settings) for f in chosen for i in range(per_family)]


def _default_settings() -> Settings:
    from orchestrator.buckets import BucketsFile

    return BucketsFile().settings
