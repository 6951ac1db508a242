"""Signal 4: many shell runs of one script or test file, tracked or not."""
from __future__ import annotations

from collections.abc import Sequence

from spiral import model
from spiral.observe import Observed
from spiral.signals._count import short, top
from spiral.verdict import Finding

NAME = "sustained_bash"


def check(window: Sequence[Observed], *, same_target: int, weight: float) -> Finding | None:
    target, count = top(e.script for e in window if e.tool == model.BASH)
    if target is not None and count >= same_target:
        return Finding(NAME, weight, f"{count} of the last {len(window)} tool calls ran {short(target)}")
    return None
