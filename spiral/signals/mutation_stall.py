"""Signal 3: late in the run, and the set of touched files stopped growing."""

from __future__ import annotations

from spiral.verdict import Finding

NAME = "mutation_stall"


def check(
    *,
    elapsed_min: float,
    expected_min: float,
    factor: float,
    stalled_for_min: float,
    stall_min: float,
    touched: int,
    weight: float,
) -> Finding | None:
    if elapsed_min < factor * expected_min or stalled_for_min < stall_min:
        return None
    return Finding(
        NAME,
        weight,
        f"no new file touched for {stalled_for_min:.0f} min "
        f"({touched} touched in all) at {elapsed_min / expected_min:.1f}x expected",
    )
