"""The polling signal (spiral/signals/polling.py) at its firing points and just below."""

from __future__ import annotations

from tests.helpers import at, bash, detector, finding, interleave, listings, polls, reads


def test_polling_fires_at_six_of_twenty_shell_calls() -> None:
    calls = interleave(polls(), listings(14))
    v = detector(calls).evaluate(at(5))
    assert v.signals == ("polling",)
    assert v.suspicion == 2
    assert finding(v, "polling") == (
        "6 of the last 20 shell calls polled a background task "
        "(sleep x2, task-output reads x2, until-waits x1, background-output tool calls x1)"
    )


def test_polling_quiet_at_five_of_twenty() -> None:
    assert detector(interleave(polls()[:5], listings(15))).evaluate(at(5)).signals == ()


def test_polling_long_sleeps_do_not_count() -> None:
    calls = [bash("sleep 120") for _ in range(6)] + [bash("sleep 61") for _ in range(6)]
    assert detector(calls).evaluate(at(5)).signals == ()
    calls = [bash("sleep 120") for _ in range(6)] + polls()[:5]
    assert detector(calls).evaluate(at(5)).signals == ()


def test_polling_window_counts_bash_like_events_only() -> None:
    # 30 Reads after the polls do not push them out of the 20 shell-call window
    assert detector(polls() + reads(30)).evaluate(at(5)).signals == ("polling",)
    # 15 other shell calls do: only 5 polls remain among the last 20
    assert detector(polls() + listings(15)).evaluate(at(5)).signals == ()
