"""`history --since` (orchestrator/ledger/since.py): ages, dates and times, as naive UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from orchestrator.infra.errors import UserError
from orchestrator.ledger.since import parse_since

NOW = datetime(2026, 12, 1, 12, 0, 0)


@pytest.mark.parametrize("text", [None, ""])
def test_no_limit(text: str | None) -> None:
    assert parse_since(text, NOW) is None


@pytest.mark.parametrize(
    ("text", "ago"),
    [
        ("90m", timedelta(minutes=90)),
        ("12h", timedelta(hours=12)),
        ("7d", timedelta(days=7)),
        ("2w", timedelta(weeks=2)),
        ("0d", timedelta(0)),
    ],
)
def test_ages_count_back_from_now(text: str, ago: timedelta) -> None:
    assert parse_since(text, NOW) == NOW - ago


def test_the_default_now_is_the_current_utc_time() -> None:
    before = datetime.now(UTC).replace(tzinfo=None)
    got = parse_since("1h")
    after = datetime.now(UTC).replace(tzinfo=None)
    assert got is not None and got.tzinfo is None
    assert before - timedelta(hours=1) <= got <= after - timedelta(hours=1)


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("2026-11-29", datetime(2026, 11, 29)),
        ("2026-11-29T10:00:00Z", datetime(2026, 11, 29, 10)),
        ("2026-11-29T10:00:00+02:00", datetime(2026, 11, 29, 8)),
    ],
)
def test_dates_and_times_are_utc(text: str, when: datetime) -> None:
    got = parse_since(text, NOW)
    assert got == when and got.tzinfo is None


@pytest.mark.parametrize("text", ["9999999999d", "9" * 5000 + "w"])
def test_an_age_older_than_any_date_means_every_run(text: str) -> None:
    assert parse_since(text, NOW) == datetime(1970, 1, 1)


@pytest.mark.parametrize("text", ["yesterday-ish", "soon", "²d", "3x", "7 d", "d", "2026-13-01"])
def test_anything_else_is_one_clear_error(text: str) -> None:
    with pytest.raises(UserError, match="^--since: expected a date") as exc:
        parse_since(text, NOW)
    assert repr(text) in str(exc.value) and exc.value.exit_code == 2
