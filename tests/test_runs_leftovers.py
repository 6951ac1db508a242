"""What an agent leaves running when it exits: the run still ends, and the leftovers end with it."""

from __future__ import annotations

import time
from pathlib import Path

import psutil

from tests.helpers import launch, state, ticket, wait


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _ended(home: Path, run_id: str) -> bool:
    return state(home, run_id)["state"] not in ("launching", "running")


def test_a_run_ends_what_its_agent_abandoned(tmp_path: Path, repo: Path, home: Path) -> None:
    """A process the agent started in a session of its own and forgot: adopted by the supervisor (not
    by init), it ends when the agent does, and the supervisor's log says so."""
    pidfile = tmp_path / "abandoned.txt"
    run_id = launch(ticket(tmp_path, repo, f"abandon {pidfile}\nexit 0"))
    wait(lambda: state(home, run_id)["state"] not in ("launching", "running"), timeout=60, what="the run to end")
    abandoned = int(pidfile.read_text())
    wait(lambda: _gone(abandoned), timeout=10, what="the abandoned process to end")
    log = (home / "runs" / run_id / "supervisor.log").read_text()
    assert f"stopped 1 processes the agent left running: {abandoned} " in log, log


def test_a_run_ends_when_its_agent_exits_though_a_leftover_holds_its_output(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    """`spawn` children inherit the agent's stdout and sleep 600 s: the capture stops once the agent
    exited (after a short drain), not at an EOF that would come only when they die."""
    pidfile = tmp_path / "pids.txt"
    body = f'spawn {pidfile}\nsay {{"tool": "Bash", "command": "echo last words"}}\nexit 0'
    started = time.monotonic()
    run_id = launch(ticket(tmp_path, repo, body))
    wait(lambda: _ended(home, run_id), timeout=60, what="the run to end")
    assert time.monotonic() - started < 50, "the run waited for its leftovers' EOF"
    s = state(home, run_id)
    assert s["state"] == "succeeded" and s["reason"] == "agent exited 0", s
    events = (home / "runs" / run_id / "events.jsonl").read_text()
    assert "last words" in events  # what the agent wrote before it exited was still captured
    pids = [int(x) for x in pidfile.read_text().split()]
    leftovers = pids[1:]  # the agent itself, then its child and grandchild
    wait(lambda: all(_gone(p) for p in leftovers), timeout=10, what="the leftovers to end")
    log = (home / "runs" / run_id / "supervisor.log").read_text()
    assert "stopped 2 processes the agent left running" in log, log
