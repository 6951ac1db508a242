"""Timestamp parsing: ISO-8601 text in, epoch seconds out (pure)."""
from __future__ import annotations

from datetime import datetime, timezone


def parse_ts(value: object) -> float | None:
    """Epoch seconds for an ISO-8601 string (or a number), None when unusable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def format_ts(epoch: float) -> str:
    """ISO-8601 UTC with a Z, millisecond precision."""
    dt = datetime.fromtimestamp(epoch, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"
