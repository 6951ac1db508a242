"""A sliding window of the last N keys with live counts: O(1) per push."""

from __future__ import annotations

from collections import deque
from operator import itemgetter

from mypy_extensions import mypyc_attr


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class SlidingCounter:
    def __init__(self, size: int) -> None:
        self.size = size
        self._keys: deque[str | None] = deque()
        self.counts: dict[str, int] = {}
        self.filled = 0  # keys that are not None in the window
        self.max_count = 0  # the highest count of any key, kept up to date per push
        self._with_count: dict[int, int] = {}  # count -> how many keys have it

    def clone(self) -> SlidingCounter:
        twin = SlidingCounter(self.size)
        twin._keys = self._keys.copy()
        twin.counts = self.counts.copy()
        twin.filled, twin.max_count = self.filled, self.max_count
        twin._with_count = self._with_count.copy()
        return twin

    def __len__(self) -> int:
        return len(self._keys)

    def push(self, key: str | None) -> None:
        keys = self._keys
        if len(keys) == self.size:
            old = keys.popleft()
            if old is not None:
                counts, hist = self.counts, self._with_count
                n = counts[old]
                hist[n] -= 1
                if n == 1:
                    del counts[old]
                else:
                    counts[old] = n - 1
                    hist[n - 1] = hist.get(n - 1, 0) + 1
                if n == self.max_count and not hist[n]:
                    self.max_count = n - 1
                self.filled -= 1
        keys.append(key)
        if key is not None:
            counts, hist = self.counts, self._with_count
            n = counts.get(key, 0)
            if n:
                hist[n] -= 1
            counts[key] = n + 1
            hist[n + 1] = hist.get(n + 1, 0) + 1
            if n + 1 > self.max_count:
                self.max_count = n + 1
            self.filled += 1

    def top(self) -> tuple[str | None, int]:
        """The most frequent key and its count; ties go to the key that entered first."""
        if not self.counts:
            return None, 0
        return max(self.counts.items(), key=itemgetter(1))
