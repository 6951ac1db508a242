"""Liveness: every ending recorded with its reason (failed, stalled, lost), nothing left `running`."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import psutil

from tests.helpers import FAST, launch, state, status_json, ticket, wait, write_config


def test_agent_failure_is_recorded_with_reason(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, "stderr something broke\nexit 3"))
    wait(lambda: state(home, run_id)["state"] == "failed")
    s = state(home, run_id)
    assert s["exit_code"] == 3
    assert s["reason"] == "agent exited 3: something broke"


def test_silent_agent_is_stalled_by_heartbeat(tmp_path: Path, repo: Path, home: Path) -> None:
    write_config(home, heartbeat=1.5)
    run_id = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}\nsleep 120'))
    agent = state(home, run_id)["agent_pid"]["pid"]

    def row() -> dict[str, Any]:  # each `status` is a pass: the first past the heartbeat stops it
        return next(r for r in status_json()["runs"] if r["id"] == run_id)

    wait(lambda: row()["state"] not in ("launching", "running"), timeout=60, what="the heartbeat's stop")
    row = row()
    assert row["state"] == "stalled", row
    assert "no log output" in row["reason"]
    wait(lambda: not psutil.pid_exists(agent) or psutil.Process(agent).status() == psutil.STATUS_ZOMBIE)


def test_overdue_run_is_stalled_with_spiral_hints(tmp_path: Path, repo: Path, home: Path) -> None:
    loop = "\n".join(['say {"tool": "Bash", "command": "python tmp_loop.py"}', "sleep 0.1"] * 400)
    overrides = {**FAST, "buckets": {"small": {"expected_min": 0.01, "soft_start_min": 0.02, "stuck_min": 0.15}}}
    run_id = launch(ticket(tmp_path, repo, "write tmp_loop.py\n" + loop, overrides=overrides))
    seen: dict[str, Any] = {}

    def tripped() -> bool:
        row = next(r for r in status_json()["runs"] if r["id"] == run_id)
        seen.update(row)
        return row["tripped_at_min"] is not None or row["state"] != "running"

    wait(tripped, timeout=8, what="the soft-band trip")
    assert seen["state"] == "running" and seen["region"] == "soft", seen
    assert {"repetition", "sustained_bash"} <= set(seen["signals"])

    def stalled() -> bool:
        row = next(r for r in status_json()["runs"] if r["id"] == run_id)
        seen.update(row)
        return row["state"] != "running"

    wait(stalled, timeout=20, what="the stuck-time stop")
    assert seen["state"] == "stalled", seen
    assert "stuck time" in seen["reason"]
    assert {"repetition", "sustained_bash"} <= set(seen["hints"])


def test_vanished_supervisor_means_lost(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, "sleep 120"))
    s = state(home, run_id)
    sup = s["supervisor"]["pid"]
    os.kill(sup, signal.SIGKILL)
    wait(lambda: not psutil.pid_exists(sup) or psutil.Process(sup).status() == psutil.STATUS_ZOMBIE)
    row = next(r for r in status_json()["runs"] if r["id"] == run_id)
    assert row["state"] == "lost" and "supervising process vanished" in row["reason"]
    agent = s["agent_pid"]["pid"]
    wait(lambda: not psutil.pid_exists(agent) or psutil.Process(agent).status() == psutil.STATUS_ZOMBIE)


def test_interrupted_kill_and_dead_supervisor_still_end_the_run(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, "sleep 60"))
    path = home / "runs" / run_id / "state.json"
    s = json.loads(path.read_text())
    s["stop_requested"] = {"as": "killed", "reason": "stopped by a person", "at": s["created_at"]}
    path.write_text(json.dumps(s))  # as if `kill` died right after asking
    os.kill(s["supervisor"]["pid"], signal.SIGKILL)
    row = next(r for r in status_json()["runs"] if r["id"] == run_id)
    assert row["state"] == "killed" and "supervisor vanished" in row["reason"]
    agent = s["agent_pid"]["pid"]
    wait(lambda: not psutil.pid_exists(agent) or psutil.Process(agent).status() == psutil.STATUS_ZOMBIE)


def test_a_run_past_its_stuck_band_in_calls_is_stalled(tmp_path: Path, repo: Path, home: Path) -> None:
    """The bands in tool calls: whichever comes first, minutes or calls (buckets.yaml's *_calls)."""
    work = "\n".join(f'say {{"tool": "Bash", "command": "ls dir{k}"}}\nsleep 0.05' for k in range(200))
    small = {"expected_min": 30, "soft_start_min": 40, "stuck_min": 50}
    calls = {"expected_calls": 10, "soft_start_calls": 20, "stuck_calls": 40}
    run_id = launch(ticket(tmp_path, repo, work, overrides={**FAST, "buckets": {"small": {**small, **calls}}}))
    seen: dict[str, Any] = {}

    def ended() -> bool:
        row = next(r for r in status_json()["runs"] if r["id"] == run_id)
        seen.update(row)
        return row["state"] != "running"

    wait(ended, timeout=30, what="the stop at the stuck band in calls")
    assert seen["state"] == "stalled", seen
    assert "stuck band" in seen["reason"] and "tool calls >= 40" in seen["reason"], seen["reason"]


def test_an_agent_that_exits_after_the_stuck_time_with_no_pass_between_is_stalled(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    """Issue 38: the ending is judged on the run's clock when the agent exited, not at the watcher's
    last pass: past its stuck time, a run the watcher would have stopped ends `stalled`, even when the
    agent exited on its own before any pass came (no watcher runs in this test)."""
    small = {"expected_min": 0.01, "soft_start_min": 0.02, "stuck_min": 0.05}  # stuck at 3 s
    body = 'say {"tool": "Bash", "command": "python tmp_loop.py"}\nsleep 5'
    run_id = launch(ticket(tmp_path, repo, body, overrides={**FAST, "buckets": {"small": small}}))
    wait(lambda: state(home, run_id)["state"] not in ("launching", "running"), timeout=30, what="the agent's exit")
    s = state(home, run_id)
    assert s["state"] == "stalled", s
    assert "stuck time" in s["reason"] and "when the agent exited on its own (agent exited 0)" in s["reason"], s
    assert s["agent_claim"]["ending"] == "succeeded"  # what the agent's own exit said is kept
    # a run that ends before its stuck time keeps the agent's own ending
    run_id = launch(ticket(tmp_path, repo, "say hi", name="t2"))
    wait(lambda: state(home, run_id)["state"] not in ("launching", "running"), timeout=30, what="the agent's exit")
    assert state(home, run_id)["state"] == "succeeded"
