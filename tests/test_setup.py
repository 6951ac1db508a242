"""A ticket's `setup:` runs in the real clone before the agent starts: its output in setup.log, a
failure ends the run `failed` with its last lines and no agent, `status` says `setting up` meanwhile."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import cli, launch, one_line_error, state, ticket, wait


def _ended(home: Path, run_id: str) -> dict[str, object]:
    wait(lambda: state(home, run_id)["state"] not in ("launching", "running"), 60, "the run's end")
    return state(home, run_id)


def test_setup_prepares_the_clone_the_agent_finds(tmp_path: Path, repo: Path, home: Path) -> None:
    secrets = tmp_path / "outside.env"
    secrets.write_text("TOKEN=abc\n")
    # the agent copies what set-up brought in: it ran first, in the clone
    body = 'say {"tool": "Bash", "command": "cat .env"}\nwrite seen.txt ok'
    run_id = launch(ticket(tmp_path, repo, body, setup=f"cp {secrets} .env && echo prepared"))
    s = _ended(home, run_id)
    assert s["state"] == "succeeded", s
    run = home / "runs" / run_id
    assert (run / "clone" / ".env").read_text() == "TOKEN=abc\n"
    assert "prepared" in (run / "setup.log").read_text()


def test_a_failing_setup_ends_the_run_failed_and_no_agent_starts(tmp_path: Path, repo: Path, home: Path) -> None:
    body = "write agent-was-here.txt yes"
    run_id = launch(
        ticket(tmp_path, repo, body, setup=["sh", "-c", "echo installing; echo 'no such package' >&2; exit 3"])
    )
    s = _ended(home, run_id)
    assert s["state"] == "failed" and s["reason"].startswith("setup exited 3: installing | no such package"), s
    assert s["agent_pid"] is None
    assert not (home / "runs" / run_id / "clone" / "agent-was-here.txt").exists()


def test_status_says_setting_up_while_it_runs(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}', setup="sleep 4"))

    def row() -> dict[str, object]:
        return next(r for r in json.loads(cli("status", "--json").stdout)["runs"] if r["id"] == run_id)

    wait(lambda: row()["setting_up"] is True, 10, "status to say setting up")
    assert "setting up" in cli("status").stdout
    assert _ended(home, run_id)["state"] == "succeeded"
    assert row()["setting_up"] is False


def test_a_bad_setup_is_a_one_line_error(tmp_path: Path, repo: Path, home: Path) -> None:
    one_line_error(cli("launch", str(ticket(tmp_path, repo, "x", setup=[]))), "setup must be a command")
    one_line_error(cli("launch", str(ticket(tmp_path, repo, "x", name="t2", setup=["ok", 3]))), "setup[1]")
