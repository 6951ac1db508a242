"""Rule signal: the same masked error, again and again, with nothing real changed between."""

from __future__ import annotations

from collections.abc import Iterable

from spiral.signals._count import short
from spiral.verdict import Finding
from spiral.window import SlidingCounter

NAME = "same_error"


def check(
    errors: SlidingCounter, calls: Iterable[tuple[str | None, str]], *, repeats: int, weight: float
) -> Finding | None:
    """`errors` holds the masked error text (or None) of each recent call since a real file last changed;
    `calls` the same window as (error text, command)."""
    if repeats == 0 or errors.max_count < repeats:
        return None
    text, count = errors.top()
    if text is None:
        return None
    varied = len({command for key, command in calls if key == text})
    how = f"from {varied} different commands" if varied > 1 else "from the same command"
    return Finding(
        NAME,
        weight,
        f"{count} of the last {len(errors)} calls failed with the same error ({short(text, 80)!r}) {how}; "
        "nothing but debris changed in between",
    )
