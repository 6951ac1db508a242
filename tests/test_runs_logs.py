"""`logs`: a run's tool calls, readable or as JSON Lines, followed with -f."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import cli, launch, state, ticket, wait


def test_logs_prints_tool_calls(tmp_path: Path, repo: Path, home: Path) -> None:
    body = 'say {"tool": "Bash", "command": "pytest tests/test_a.py"}\nsay {"tool": "Read", "path": "src/app.py"}'
    run_id = launch(ticket(tmp_path, repo, body))
    wait(lambda: state(home, run_id)["state"] == "succeeded")
    p = cli("logs", run_id[:8])
    assert p.returncode == 0, p.stderr
    rows = p.stdout.strip().splitlines()
    assert len(rows) == 2
    assert "Bash" in rows[0] and "pytest tests/test_a.py" in rows[0]
    assert "Read" in rows[1] and "src/app.py" in rows[1]
    follow = cli("logs", run_id, "-f", timeout=20)
    assert follow.returncode == 0 and follow.stdout == p.stdout


def test_logs_json_and_logs_of_a_run_that_never_started(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, 'say {"tool": "Edit", "path": "src/app.py"}'))
    wait(lambda: state(home, run_id)["state"] == "succeeded")
    lines = [json.loads(x) for x in cli("logs", run_id, "--json").stdout.splitlines()]
    assert lines == [{**lines[0], "version": 1, "tool": "Edit", "path": "src/app.py", "is_error": False}]
    p = cli("launch", str(ticket(tmp_path, tmp_path / "missing-repo", "x", name="gone")))
    assert p.returncode == 2
    failed = next(d.name for d in (home / "runs").iterdir() if d.name.startswith("gone-"))
    p = cli("logs", failed)
    assert p.returncode == 0 and p.stdout == ""
