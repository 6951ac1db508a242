"""Rule signal: the same masked error, again and again, with nothing real changed between."""

from __future__ import annotations

from spiral.signals._count import short
from spiral.verdict import Finding
from spiral.window import SlidingCounter

NAME = "same_error"


def check(
    errors: SlidingCounter, commands: dict[str, dict[str, None]], *, repeats: int, weight: float
) -> Finding | None:
    """`errors` holds the masked error text (or None) of each recent call since a real file last changed."""
    if repeats == 0 or errors.max_count < repeats:
        return None
    text, count = errors.top()
    if text is None:
        return None
    varied = len(commands.get(text, ()))
    how = f"from {varied} different commands" if varied > 1 else "from the same command"
    return Finding(
        NAME,
        weight,
        f"{count} of the last {len(errors)} calls failed with the same error ({short(text, 80)!r}) {how}; "
        "no file changed in between",
    )
