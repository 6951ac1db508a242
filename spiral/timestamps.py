"""Timestamp parsing: ISO-8601 text in, epoch seconds out (pure)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final

# The shape every log and envelope we write uses: 2026-05-20T09:00:00.123Z
_UTC_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z$")
_minute_cache: dict[str, float] = {}


class _LastMinute:
    """The minute the last common-shape timestamp fell in: a log's lines come minutes at a time, so most
    are checked against it with no slice and no hashing (the replay's hottest line)."""

    def __init__(self) -> None:
        self.prefix = "\0"  # never a timestamp's start
        self.base = 0.0


_LAST: Final = _LastMinute()


def parse_ts(value: object) -> float | None:
    """Epoch seconds for an ISO-8601 string (or a number), None when unusable."""
    if type(value) is str and len(value) >= 20 and value[-1] == "Z" and value[10] == "T" and value[16] == ":":
        # the common shape (the replay hot path): each minute parsed once, the seconds as a plain float
        last = _LAST
        if value.startswith(last.prefix):
            base = last.base
        else:
            minute = value[:16]
            cached = _minute_cache.get(minute)
            if cached is None:
                return _parse(value)
            last.prefix, last.base = minute, cached
            base = cached
        try:
            secs = float(value[17:-1])
        except ValueError:
            return None
        return base + secs if 0 <= secs < 60 else None
    return _parse(value)


def _parse(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str) or not value:
        return None
    if len(value) >= 20 and value[-1] == "Z" and value[10] == "T" and value[16] == ":":
        minute = value[:16]
        base = _minute_cache.get(minute)
        if base is None:
            if not _UTC_Z.match(value):
                return _slow(value)
            base = _slow(minute + ":00Z")
            if base is None:
                return None
            if len(_minute_cache) > 4096:
                _minute_cache.clear()
            _minute_cache[minute] = base
        try:
            secs = float(value[17:-1])
        except ValueError:
            return None
        return base + secs if 0 <= secs < 60 else None
    return _slow(value)


def _slow(value: str) -> float | None:
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def format_ts(epoch: float) -> str:
    """ISO-8601 UTC with a Z, millisecond precision."""
    dt = datetime.fromtimestamp(epoch, tz=UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
