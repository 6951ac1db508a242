from __future__ import annotations

from collections import Counter
from collections.abc import Iterable


def top(items: Iterable[str | None]) -> tuple[str | None, int]:
    """The most frequent non-None item and its count; ties go to the first seen."""
    counts = Counter(i for i in items if i is not None)
    if not counts:
        return None, 0
    best = max(counts.values())
    for item in counts:  # insertion order makes ties deterministic
        if counts[item] == best:
            return item, best
    raise AssertionError("unreachable")  # pragma: no cover - max() came from these counts


def short(path: str, limit: int = 60) -> str:
    return path if len(path) <= limit else "..." + path[-(limit - 3):]
