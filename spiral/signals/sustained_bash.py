"""Signal 4: many shell runs of one script or test file, tracked or not."""

from __future__ import annotations

from spiral import model
from spiral.observe import Observed
from spiral.signals._count import short
from spiral.verdict import Finding
from spiral.window import SlidingCounter

NAME = "sustained_bash"


def key(e: Observed) -> str | None:
    return e.script if e.tool == model.BASH else None


def check(targets: SlidingCounter, *, same_target: int, weight: float) -> Finding | None:
    if targets.max_count < same_target:
        return None
    target, count = targets.top()
    if target is not None:
        return Finding(NAME, weight, f"{count} of the last {len(targets)} tool calls ran {short(target)}", target)
    return None
