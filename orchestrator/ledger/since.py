"""`history --since`: a date, a time or an age, as the ledger's naive-UTC datetime."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from orchestrator.infra.errors import UserError
from spiral.timestamps import parse_ts

_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 604800}
# older than any run: an age too large for a datetime still means "every run"
_EPOCH = datetime(1970, 1, 1)


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """`7d`, `12h`, `90m`, `2w`, `2026-11-29` or `2026-11-29T10:00:00Z`; None or "" is no limit.

    The ledger stores UTC times without a zone, so the result is naive UTC.
    `now` (naive UTC) is for tests; by default the current time.
    """
    if not text:
        return None
    count, unit = text[:-1], text[-1]
    if count.isascii() and count.isdigit() and unit in _UNIT_SECONDS:
        start = now if now is not None else datetime.now(UTC).replace(tzinfo=None)
        try:
            return start - timedelta(seconds=int(count) * _UNIT_SECONDS[unit])
        except (OverflowError, ValueError):  # ValueError: more digits than int() takes
            return _EPOCH
    ts = parse_ts(text if "T" in text else text + "T00:00:00Z")
    if ts is None:
        raise UserError(
            f"--since: expected a date (2026-11-29), a time (2026-11-29T10:00:00Z) or an age "
            f"(90m, 12h, 7d, 2w), got {text!r}"
        )
    return datetime.fromtimestamp(ts, tz=UTC).replace(tzinfo=None)
