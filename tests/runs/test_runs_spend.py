"""Spend as `status --json` and `history --json` show it, live and after the run, through the
agent's own session files (a stand-in agent writes them where the real CLIs do)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.ledger.agent_records import claude_project_name
from tests.helpers import FAKE_AGENT, cli, launch, orchestrator_home, state, status_json, ticket, wait

SID = "0f3c5d2e-1111-4aaa-8bbb-123456789abc"
THREAD = "01a23106-7123-7ef1-9efd-da7606074297"  # a UUIDv7 of 2026-12-01


def _config(agents: dict[str, Any]) -> None:
    for a in agents.values():
        a.setdefault("command", [sys.executable, str(FAKE_AGENT)])
        a.setdefault("version_command", [sys.executable, "--version"])
    (orchestrator_home() / "config.yaml").write_text(json.dumps({"agents": agents}))


def _row(run_id: str) -> dict[str, Any]:
    return next(r for r in status_json()["runs"] if r["id"] == run_id)


def _history(run_id: str) -> dict[str, Any]:
    p = cli("history", "--json")
    assert p.returncode == 0, p.stderr
    return next(r for r in json.loads(p.stdout)["runs"] if r["run_id"] == run_id)


def _one_line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":"))


def test_claude_spend_is_read_from_its_transcript_live_and_after(tmp_path: Path, repo: Path) -> None:
    config_dir = tmp_path / "claude-config"
    _config({"fakeclaude": {"format": "claude-stream-json", "env": {"CLAUDE_CONFIG_DIR": str(config_dir)}}})
    cwd = "/work/some.repo"  # the folder name is the cwd's, as Claude Code writes it
    transcript = config_dir / "projects" / claude_project_name(cwd) / f"{SID}.jsonl"
    start = {"input_tokens": 1000, "output_tokens": 3, "cache_read_input_tokens": 200, "cache_creation_input_tokens": 0}
    final = start | {"output_tokens": 50}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-opus-4-8", "content": []}
    script = "\n".join(
        [
            "say "
            + _one_line(
                {"type": "system", "subtype": "init", "cwd": cwd, "session_id": SID, "model": "claude-opus-4-8[1m]"}
            ),
            "say " + _one_line({"type": "assistant", "message": message | {"usage": start}, "session_id": SID}),
            f"write {transcript} "
            + _one_line({"type": "assistant", "message": message | {"usage": final}, "sessionId": SID}),
            "sleep 60",
        ]
    )
    run_id = launch(ticket(tmp_path, repo, script, agent="fakeclaude"))
    home = orchestrator_home()
    wait(lambda: transcript.exists(), what="the transcript")
    want_usd = (1000 * 5 + 50 * 25 + 200 * 0.5) / 1e6  # genai-prices' claude-opus-4-8
    wait(lambda: _row(run_id)["tokens"] == 1250, what="live tokens from the transcript")
    row = _row(run_id)
    assert row["state"] == "running" and row["cost_usd"] == pytest.approx(want_usd)
    assert _history(run_id)["tokens"] == 1250  # the ledger reads the transcript too
    assert cli("kill", run_id).returncode == 0
    wait(lambda: state(home, run_id)["state"] == "killed", what="the kill")
    row = _row(run_id)  # ended without a result line: its total is taken from the transcript, once
    assert row["tokens"] == 1250 and row["cost_usd"] == pytest.approx(want_usd)
    assert state(home, run_id)["spend"]["output_tokens"] == 50
    transcript.unlink()  # the agent's records removed since: the run's recorded totals stand
    cli("ledger", "rebuild")
    h = _history(run_id)
    assert h["tokens"] == 1250 and h["cost_usd"] == pytest.approx(want_usd)


def test_codex_spend_is_read_from_its_rollout_before_turn_completed(tmp_path: Path, repo: Path) -> None:
    codex_home = tmp_path / "codex-home"
    _config({"fakecodex": {"format": "codex-json", "model": "gpt-5.5", "env": {"CODEX_HOME": str(codex_home)}}})
    rollout = codex_home / "sessions" / "2026" / "12" / "01" / f"rollout-2026-12-01T09-53-55-{THREAD}.jsonl"
    usage = {"input_tokens": 3000, "cached_input_tokens": 200, "cache_write_input_tokens": 0, "output_tokens": 120}
    record = {
        "type": "token_usage_record",
        "payload": {"response_id": "resp_1", "usage": usage, "thread_token_usage": usage},
    }
    script = "\n".join(
        [
            "say " + _one_line({"type": "thread.started", "thread_id": THREAD}),
            'say {"type":"turn.started"}',
            f"write {rollout} " + _one_line(record),
            "sleep 3",
            "say " + _one_line({"type": "turn.completed", "usage": usage}),
        ]
    )
    run_id = launch(ticket(tmp_path, repo, script, agent="fakecodex"))
    wait(lambda: rollout.exists(), what="the rollout")
    row = _row(run_id)
    if row["state"] == "running":  # exec --json has said nothing of usage yet
        assert row["tokens"] == 3120
        assert row["cost_usd"] == pytest.approx((2800 * 5 + 200 * 0.5 + 120 * 30) / 1e6)  # the profile's gpt-5.5
    home = orchestrator_home()
    wait(lambda: state(home, run_id)["state"] == "succeeded", what="the end")
    row = _row(run_id)
    assert row["tokens"] == 3120 and _history(run_id)["tokens"] == 3120
