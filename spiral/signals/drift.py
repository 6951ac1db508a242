"""Rule signal: the recent edits all fall outside the ticket's `scope:` while nothing in it moves."""

from __future__ import annotations

from collections.abc import Sequence

from spiral.signals._count import short
from spiral.verdict import Finding

NAME = "drift"


def check(
    outside: Sequence[str],
    *,
    streak: int,
    recent_edits: int,
    quiet_for_min: float,
    quiet_min: float,
    weight: float,
) -> Finding | None:
    """`streak` edits in a row fell outside the scope; `outside` names the latest of those files."""
    if recent_edits == 0 or streak < recent_edits or quiet_for_min < quiet_min:
        return None
    names = ", ".join(short(p, 40) for p in outside[-4:])
    return Finding(
        NAME,
        weight,
        f"the last {streak} edits fell outside the ticket's scope ({names}); "
        f"no file in scope or declared output changed for {quiet_for_min:.0f} min",
    )
