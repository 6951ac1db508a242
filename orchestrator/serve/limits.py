"""Requests per address, held to a rate: a token bucket for each remote address (and kind of request).

A flood (a thousand requests a second) gets 429 for most of it and costs a dictionary lookup each;
the buckets of addresses gone quiet are dropped. Pure: callers pass `now`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

FORGET_S = 60.0
MAX_ADDRESSES = 10_000


@dataclass(frozen=True)
class Rate:
    per_s: float
    burst: float


READS = Rate(per_s=20.0, burst=60.0)  # the live page polls every 3 s; a report pulls a few assets
WRITES = Rate(per_s=5.0, burst=30.0)  # a person taps a few buttons a minute; a script may check a few tokens


class Limiter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}  # (address, kind) -> (tokens, at)

    def allow(self, address: str, kind: str, rate: Rate, now: float) -> bool:
        with self._lock:
            if len(self._buckets) >= MAX_ADDRESSES:
                self._forget(now)
            tokens, at = self._buckets.get((address, kind), (rate.burst, now))
            tokens = min(rate.burst, tokens + max(0.0, now - at) * rate.per_s)
            ok = tokens >= 1.0
            self._buckets[(address, kind)] = (tokens - 1.0 if ok else tokens, now)
            return ok

    def _forget(self, now: float) -> None:
        for k in [k for k, (_, at) in self._buckets.items() if now - at > FORGET_S]:
            del self._buckets[k]
        if len(self._buckets) >= MAX_ADDRESSES:
            self._buckets.clear()  # spread over too many addresses to tell apart: start again
