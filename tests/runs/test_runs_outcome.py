"""Endings from the agent's own records, provider episodes, and the watcher `launch` starts (docs/agent-outcomes.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from orchestrator.runs.steps.provider import PROVIDER_NOTICE_ATTEMPTS
from spiral.outcome import Outcome, blocked_before
from tests.helpers import FAKE_AGENT, TINY, Receiver, cli, launch, spiral_pages, state, status_json, ticket, wait

SESSION = {"type": "system", "subtype": "init", "session_id": "s1", "model": "claude-opus-4-8[1m]"}


def retry(n: int, status: int = 429, error: str = "rate_limit", of: int = 10) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "api_retry",
        "attempt": n,
        "max_retries": of,
        "error_status": status,
        "error": error,
        "retry_delay_ms": 500,
    }


def gave_up(status: int) -> list[dict[str, Any]]:
    synthetic = {
        "type": "assistant",
        "message": {
            "id": "m0",
            "model": "<synthetic>",
            "role": "assistant",
            "content": [{"type": "text", "text": f"API Error: {status}"}],
        },
    }
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": status,
        "result": f"API Error: {status}",
        "permission_denials": [],
    }
    return [synthetic, result]


def tool_use(i: int, command: str) -> dict[str, Any]:
    return {
        "type": "assistant",
        "message": {
            "id": f"m{i}",
            "model": "claude-opus-4-8",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": "Bash", "input": {"command": command}}],
        },
    }


def refused(i: int) -> dict[str, Any]:
    return {
        "type": "user",
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": f"toolu_{i}",
                    "is_error": True,
                    "content": "This command requires approval",
                }
            ],
        },
    }


def outcome_of(lines: list[dict[str, Any]], step: float = 1.0) -> Outcome:
    o = Outcome()
    for i, line in enumerate(lines):
        o.feed(i * step, line)
    return o


# ---- the pure reading ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error", "reason"),
    [
        (429, "rate_limit", "provider: rate limited (429) after 3 retries"),
        (529, "overloaded", "provider: overloaded (529) after 3 retries"),
        (401, "authentication_failed", "provider: authentication failed (401) after 3 retries"),
    ],
)
def test_claude_giving_up_on_its_api_is_a_named_provider_ending(status: int, error: str, reason: str) -> None:
    o = outcome_of(
        [SESSION, retry(1, status, error), retry(2, status, error), retry(3, status, error), *gave_up(status)]
    )
    assert o.ending(1) == ("failed", reason)
    assert len(o.episodes) == 1 and o.provider is None  # the final record closes the episode


def test_codex_reconnecting_then_turn_failed() -> None:
    lines: list[dict[str, Any]] = [{"type": "thread.started", "thread_id": "t"}, {"type": "turn.started"}]
    lines += [
        {
            "type": "error",
            "message": f"Reconnecting... {n}/5 (exceeded retry limit, last status: 429 Too Many Requests)",
        }
        for n in range(1, 6)
    ]
    lines += [{"type": "turn.failed", "error": {"message": "exceeded retry limit, last status: 429 Too Many Requests"}}]
    assert outcome_of(lines).ending(1) == ("failed", "provider: rate limited (429) after 5 retries")


def test_an_episode_that_recovers_is_blocked_time_not_an_ending() -> None:
    lines = [SESSION, tool_use(1, "ls"), retry(1), retry(2), retry(3), tool_use(2, "pytest")]
    o = outcome_of(lines, step=60.0)  # retries at 120, 180, 240 s; the API answers at 300 s
    assert o.ending(0) is None and o.provider is None
    assert o.blocked_intervals(1000) == [(120.0, 300.0)]
    assert [blocked_before(o.blocked_intervals(1000), t) for t in (100, 200, 300, 900)] == [0, 80, 180, 180]


def test_a_recovered_episode_is_not_blamed_for_a_later_error() -> None:
    malformed = {
        "type": "result",
        "subtype": "success",
        "is_error": True,
        "api_error_status": None,
        "result": "API Error: API returned an empty or malformed response (HTTP 200)",
    }
    # 429s, then answers (the episode ends), then an error of another kind with no status
    o = outcome_of([SESSION, retry(1), retry(2), retry(3), tool_use(1, "ls"), tool_use(2, "pytest"), malformed])
    assert o.ending(1) == ("failed", "agent reported an error: " + malformed["result"])


def test_a_provider_failure_with_no_status_is_named_in_the_agents_words() -> None:
    timeout = [retry(n, status=0, error="unknown") for n in (1, 2)]
    for line in timeout:
        line["error_status"] = None
    final = {"type": "result", "subtype": "success", "is_error": True, "result": "Request timed out"}
    o = outcome_of([SESSION, tool_use(1, "ls"), *timeout, final])  # still retrying when it gave up
    assert o.ending(1) == ("failed", "provider: Request timed out after 2 retries")


def test_a_live_episode_describes_itself() -> None:
    o = outcome_of([SESSION, retry(1), retry(4, of=10)])
    assert o.provider is not None and o.provider.describe() == "retrying rate limited (429) (attempt 4/10)"


def test_every_call_denied_is_a_failed_run_even_with_exit_0() -> None:
    lines = [SESSION]
    for i in range(3):
        lines += [tool_use(i, f"python tmp_{i}.py"), refused(i)]
    lines.append({"type": "result", "subtype": "success", "is_error": False, "permission_denials": []})
    assert outcome_of(lines).ending(0) == ("failed", "tools denied: 3 of 3 calls (the profile allows no tools)")


def test_a_healthy_log_leaves_the_exit_code_to_decide() -> None:
    lines = [SESSION, tool_use(1, "ls"), {"type": "result", "subtype": "success", "is_error": False}]
    assert outcome_of(lines).ending(0) is None


# ---- live runs: the supervisor's ending, status, the provider notice ----------------------


def claude_shaped_config(home: Path, **extra: Any) -> None:
    """A profile running the fake agent, read as Claude stream-json: its `say` lines are the log."""
    cfg = {"agents": {"fake": {"command": [sys.executable, str(FAKE_AGENT)], "format": "claude-stream-json"}}}
    (home / "config.yaml").write_text(json.dumps({**cfg, **extra}))


def says(lines: list[dict[str, Any]], pause: float = 0.0) -> str:
    out = []
    for line in lines:
        out.append(f"say {json.dumps(line)}")
        if pause:
            out.append(f"sleep {pause}")
    return "\n".join(out)


def test_a_rate_limited_run_shows_the_provider_pages_it_once_and_ends_named(
    tmp_path: Path, repo: Path, home: Path, receiver: Receiver
) -> None:
    claude_shaped_config(home, notify={"urls": [receiver.url], "events": ["spiral", "provider", "failed"]})
    n = PROVIDER_NOTICE_ATTEMPTS + 1
    body = says([SESSION, *[retry(i) for i in range(1, n + 1)]], pause=0.2) + "\nsleep 3\n" + says(gave_up(429))
    run_id = launch(ticket(tmp_path, repo, body + "\nexit 1"))
    seen: dict[str, Any] = {}

    def retrying() -> bool:
        row = next(r for r in status_json()["runs"] if r["id"] == run_id)
        seen.update(row)
        return bool(row["provider"] and row["provider"]["attempt"] == n)

    wait(retrying, timeout=30, what="status showing the provider retrying")
    assert seen["provider"]["text"] == f"retrying rate limited (429) (attempt {n}/10)"
    assert seen["state"] == "running" and seen["signals"] == []
    wait(lambda: state(home, run_id)["state"] == "failed", timeout=30, what="the named ending")
    s = state(home, run_id)
    assert s["reason"] == f"provider: rate limited (429) after {n} retries"
    assert s["provider"] is None and s["agent_report"]["provider_episodes"] == 1
    cli("status")
    titles = receiver.titles()
    assert titles.count(f"run {run_id}: model API failing") == 1, titles
    assert spiral_pages(receiver, run_id) == 0


def test_a_run_whose_tools_were_all_denied_fails_with_the_count(tmp_path: Path, repo: Path, home: Path) -> None:
    claude_shaped_config(home)
    lines: list[dict[str, Any]] = [SESSION]
    for i in range(4):
        lines += [tool_use(i, "python tmp_debug.py"), refused(i)]
    lines.append({"type": "result", "subtype": "success", "is_error": False, "permission_denials": []})
    run_id = launch(ticket(tmp_path, repo, says(lines)))
    wait(lambda: state(home, run_id)["state"] != "running", timeout=30, what="the ending")
    s = state(home, run_id)
    assert (s["state"], s["reason"]) == ("failed", "tools denied: 4 of 4 calls (the profile allows no tools)")
    assert s["exit_code"] == 0 and s["agent_report"]["denied_calls"] == 4


# ---- nobody watching: launch starts the watcher --------------------------------------------


def test_a_spiral_pages_with_nobody_running_watch_or_status(
    tmp_path: Path, repo: Path, home: Path, receiver: Receiver
) -> None:
    cfg = {
        "agents": {"fake": {"command": [sys.executable, str(FAKE_AGENT)], "format": "generic"}},
        "notify": {"urls": [receiver.url]},
        "autostart_watcher": True,
        "watcher_tick_seconds": 0.3,
        "watcher_idle_seconds": 1.5,
    }
    (home / "config.yaml").write_text(json.dumps(cfg))
    loop = "\n".join(['say {"tool": "Bash", "command": "python tmp_loop.py"}', "sleep 0.1"] * 60)
    run_id = launch(ticket(tmp_path, repo, "write tmp_loop.py\n" + loop, overrides=TINY))
    wait(lambda: spiral_pages(receiver, run_id) == 1, timeout=60, what="the page, with no watcher started by hand")
    pid = int((home / "watch.lock").read_text().strip())
    wait(lambda: state(home, run_id)["state"] == "succeeded", timeout=60, what="the run's own ending")
    assert spiral_pages(receiver, run_id) == 1  # once, and the run was never killed for it
    wait(
        lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
        timeout=30,
        what="the idle watcher to exit on its own",
    )
    assert spiral_pages(receiver, run_id) == 1  # (it sends before it exits: nothing can come later)
