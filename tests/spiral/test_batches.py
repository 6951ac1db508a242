"""rules.batches: calls of one tool issued together (a parallel batch) that fail alike are one attempt.

The real shape: a Claude Code agent fires five downloads in one turn and all five come back
"MCP error 0: No downloads left"; another reads-then-edits six files at once and each edit says
"File has not been read yet". The agent saw none of those results before issuing the others, so
they are not five tries of one thing. The same failures a turn apart are.
"""

from __future__ import annotations

import copy
from typing import Any

from orchestrator.buckets import BucketsFile
from spiral.adapters import make_adapter
from spiral.detector import Detector
from spiral.settings import Settings

QUOTA = {"tool": "mcp__books__download", "output": "MCP error 0: No downloads left", "is_error": True}
TEST = {"tool": "Bash", "command": "pytest tests/test_x.py", "exit_code": 1, "output": "E   KeyError: 'x'\n1 failed"}


def _settings(batches: bool) -> Settings:
    raw = copy.deepcopy(BucketsFile().raw)
    raw["rules"]["batches"] = {"enabled": batches, "within_seconds": 0}  # as shipped: one timestamp
    return Settings.from_mapping(raw)


def _signals(items: list[tuple[float, dict[str, Any]]], batches: bool = True) -> tuple[str, ...]:
    det = Detector(_settings(batches), bucket="small", started_at=0.0)
    adapter = make_adapter("generic", None)
    for ts, data in items:
        det.add_calls(adapter.feed(ts, data))
    return det.evaluate(items[-1][0] + 1).signals


def test_a_parallel_batch_failing_alike_is_one_attempt() -> None:
    batch = [(60.0, dict(QUOTA)) for _ in range(5)]
    assert "same_error" not in _signals(batch)
    assert "same_error" in _signals(batch, batches=False)  # the rule off: five repeats, as before


def test_the_same_failure_a_turn_apart_still_counts() -> None:
    apart = [(60.0 + 8 * i, dict(QUOTA)) for i in range(5)]
    assert "same_error" in _signals(apart)


def test_batches_then_turns_count_once_per_turn() -> None:
    # three turns, each a batch of three identical failures: three attempts, not nine
    turns = [(60.0 + 20 * t, dict(QUOTA)) for t in range(3) for _ in range(3)]
    assert "same_error" not in _signals(turns)
    turns += [(200.0 + 20 * t, dict(QUOTA)) for t in range(2)]  # two more turns: five attempts
    assert "same_error" in _signals(turns)


def test_a_check_rerun_in_one_batch_is_one_attempt_of_stuck_check() -> None:
    batch = [(60.0, dict(TEST)) for _ in range(6)]
    assert "stuck_check" not in _signals(batch)
    apart = [(60.0 + 15 * i, dict(TEST)) for i in range(6)]
    assert "stuck_check" in _signals(apart)


def test_a_buckets_file_without_the_block_keeps_every_call() -> None:
    raw = copy.deepcopy(BucketsFile().raw)
    del raw["rules"]["batches"]
    assert Settings.from_mapping(raw).rules.batches is False


def test_a_fast_sequential_loop_is_not_a_batch() -> None:
    # a scripted agent's calls 20 ms apart: each a turn of its own, however quick
    fast = [(60.0 + 0.02 * i, dict(QUOTA)) for i in range(6)]
    assert "same_error" in _signals(fast)
