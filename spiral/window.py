"""A sliding window of the last N keys with live counts: O(1) per push."""
from __future__ import annotations

from collections import deque
from operator import itemgetter


class SlidingCounter:
    def __init__(self, size: int) -> None:
        self.size = size
        self._keys: deque[str | None] = deque()
        self.counts: dict[str, int] = {}
        self.filled = 0  # keys that are not None in the window

    def __len__(self) -> int:
        return len(self._keys)

    def push(self, key: str | None) -> None:
        keys, counts = self._keys, self.counts
        if len(keys) == self.size:
            old = keys.popleft()
            if old is not None:
                n = counts[old]
                if n == 1:
                    del counts[old]
                else:
                    counts[old] = n - 1
                self.filled -= 1
        keys.append(key)
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
            self.filled += 1

    def top(self) -> tuple[str | None, int]:
        """The most frequent key and its count; ties go to the key that entered first."""
        if not self.counts:
            return None, 0
        return max(self.counts.items(), key=itemgetter(1))
