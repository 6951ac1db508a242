"""Replay walks a recording as the waking watcher evaluates it (rules.wake): a loop that shows
between two ticks and is gone by the next pages, as it does live; with the rule off, the tick alone."""

from __future__ import annotations

import copy
from typing import Any

from orchestrator.buckets import BucketsFile
from orchestrator.corpus.replay import walk_recording
from spiral.adapters import make_adapter
from spiral.settings import Settings
from spiral.walk import WAKE_SETTLE_S

FAIL = "E   AssertionError: assert parse('1,2') == [1, 2]\n1 failed in 0.31s"


def _timeline() -> list[tuple[float, list[Any]]]:
    """Ten runs of one failing test, 2 s apart, between the ticks at 30 s and 60 s; then it passes."""
    adapter = make_adapter("generic", None)
    items: list[tuple[float, dict[str, Any]]] = [(0.0, {"tool": "Read", "file": "src/parse.py"})]
    items += [
        (31.0 + 2 * i, {"tool": "Bash", "command": "pytest tests/test_parse.py", "exit_code": 1, "output": FAIL})
        for i in range(10)
    ]
    items += [(52.0, {"tool": "Bash", "command": "pytest tests/test_parse.py", "exit_code": 0, "output": "1 passed"})]
    items += [(54.0 + 2 * i, {"tool": "Read", "file": f"src/mod{i}.py"}) for i in range(3)]
    return [(ts, adapter.feed(ts, data)) for ts, data in items]


def _settings(wake: bool) -> Settings:
    raw = copy.deepcopy(BucketsFile().raw)
    raw["rules"]["wake"] = {"enabled": wake}
    return Settings.from_mapping(raw)


def _walk(wake: bool) -> Any:
    return walk_recording(_settings(wake), bucket="small", start=0.0, end=600.0, timeline=_timeline())


def test_a_loop_between_two_ticks_pages_on_the_wake_after_its_sixth_try() -> None:
    walk = _walk(wake=True)
    page = walk.notified
    assert page is not None, "the loop was on screen for 20 s between ticks: the watcher would page it"
    assert page.sustained is not None and "stuck_check" in page.signals
    # the sixth try of the stuck check (rules.sustained.min_attempts) came at 41 s: the wake after
    # it, not the next tick (60 s, by when it had passed)
    assert abs(page.elapsed_min * 60 - (41.0 + WAKE_SETTLE_S)) < 1e-6
    assert "6 tries of one check" in page.sustained


def test_with_wake_off_the_tick_alone_sees_nothing() -> None:
    walk = _walk(wake=False)
    assert walk.notified is None  # at 30 s nothing had failed; by 60 s the test passed


def test_a_buckets_file_without_the_block_walks_the_tick_as_the_contract_does() -> None:
    raw = copy.deepcopy(BucketsFile().raw)
    del raw["rules"]["wake"]
    assert Settings.from_mapping(raw).rules.wake is False
    assert _settings(True).rules.wake is True


def test_wakes_never_evaluate_past_the_recording_end() -> None:
    # the same loop, but the recording ends at its last call: no wake lands after the end
    settings = _settings(wake=True)
    timeline = _timeline()[:8]
    end = timeline[-1][0]
    walk = walk_recording(settings, bucket="small", start=0.0, end=end, timeline=timeline)
    assert walk.notified is None or walk.notified.elapsed_min * 60 <= end
