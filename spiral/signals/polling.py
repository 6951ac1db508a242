"""Signal 5: waiting on a background task with sleep / cat / until loops."""

from __future__ import annotations

from spiral.verdict import Finding
from spiral.window import SlidingCounter

NAME = "polling"
_LABELS = {
    "sleep": "sleep",
    "task-output": "task-output reads",
    "until": "until-waits",
    "native": "background-output tool calls",
}


def check(polls_window: SlidingCounter, *, polls: int, weight: float) -> Finding | None:
    """`polls_window` holds the polling kind (or None) of each recent shell-like call."""
    count = polls_window.filled
    if count < polls or count == 0:
        return None
    kinds = polls_window.counts
    parts = ", ".join(f"{_LABELS[k]} x{kinds[k]}" for k in _LABELS if kinds.get(k))
    return Finding(
        NAME, weight, f"{count} of the last {len(polls_window)} shell calls polled a background task ({parts})"
    )
