"""Signal 1: throwaway files pile up while the real outputs stand still."""

from __future__ import annotations

from collections.abc import Sequence

from spiral.verdict import Finding

NAME = "debris"


def check(
    debris: Sequence[str],
    *,
    quiet_min: float,
    outputs_declared: bool,
    debris_min: int,
    quiet_for_min: float,
    weight: float,
) -> Finding | None:
    if len(debris) < debris_min or debris_min == 0 or quiet_for_min < quiet_min:
        return None
    names = ", ".join(sorted(debris)[:4]) + (", ..." if len(debris) > 4 else "")
    what = "no declared output" if outputs_declared else "no other file"
    return Finding(
        NAME, weight, f"{len(debris)} debris files in the clone ({names}); {what} changed for {quiet_for_min:.0f} min"
    )
