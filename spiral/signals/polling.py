"""Signal 5: waiting on a background task with sleep / cat / until loops."""
from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from spiral.observe import Observed
from spiral.verdict import Finding

NAME = "polling"
_LABELS = {"sleep": "sleep", "task-output": "task-output reads", "until": "until-waits",
           "native": "background-output tool calls"}


def check(shell_window: Sequence[Observed], *, polls: int, weight: float) -> Finding | None:
    kinds = Counter(e.poll for e in shell_window if e.poll is not None)
    count = sum(kinds.values())
    if count < polls or count == 0:
        return None
    parts = ", ".join(f"{_LABELS[k]} x{kinds[k]}" for k in _LABELS if kinds[k])
    return Finding(NAME, weight, f"{count} of the last {len(shell_window)} shell calls polled a background task ({parts})")
