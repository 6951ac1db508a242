"""The rendered log's lines and times, as events.jsonl holds them and as a replay reads them back (pure)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from spiral.envelope import make_envelope

Line = tuple[float, Any]  # (epoch seconds, the agent's native line): a log line not yet written


def format_ts(epoch: float) -> str:
    """spiral.timestamps.format_ts, character for character, without a datetime (the renderer's hottest call).

    The microseconds are rounded as datetime.fromtimestamp rounds them (the fraction from modf, times
    10**6, half to even, carried into the seconds); the date is worked out once per day.
    """
    seconds, ms = _whole_ms(epoch)
    day, rest = divmod(seconds, 86_400)
    date = _DATES.get(day)
    if date is None:
        d = datetime.fromtimestamp(day * 86_400, tz=UTC)
        date = _DATES[day] = f"{d.year:04d}-{d.month:02d}-{d.day:02d}T"
    hour, rest = divmod(rest, 3600)
    minute, second = divmod(rest, 60)
    return date + _TWO[hour] + ":" + _TWO[minute] + ":" + _TWO[second] + _MS[ms]


def read_back_ts(epoch: float) -> float:
    """What spiral.timestamps.parse_ts gives back for format_ts(epoch), without the text.

    format_ts keeps whole milliseconds; parse_ts adds the minute's epoch to float("SS.mmm"). Both
    roundings are repeated here: float() of that text is the double nearest to (SS*1000 + mmm)/1000,
    which Python's int division also gives.
    """
    seconds, ms = _whole_ms(epoch)
    second = seconds % 60
    return float(seconds - second) + (second * 1000 + ms) / 1000


def _whole_ms(epoch: float) -> tuple[int, int]:
    """The whole seconds and milliseconds datetime.fromtimestamp shows for `epoch` (microseconds rounded
    from modf's fraction, half to even, carried into the seconds; then cut to milliseconds)."""
    frac, whole = math.modf(epoch)
    us = round(frac * 1e6)
    if us >= 1_000_000:
        us -= 1_000_000
        whole += 1.0
    elif us < 0:
        us += 1_000_000
        whole -= 1.0
    return int(whole), us // 1000


def envelope_line(ts: float, data: Any) -> bytes:
    """One events.jsonl line, as the orchestrator writes it."""
    return make_envelope(format_ts(ts), data)


_DATES: dict[int, str] = {}  # day number since the epoch -> its date (a bench spans a few hundred days)
_TWO = [f"{n:02d}" for n in range(60)]
_MS = [f".{n:03d}Z" for n in range(1000)]
