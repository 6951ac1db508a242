"""`logs`: a run's tool calls, readable or as JSON Lines, followed with -f."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from tests.helpers import cli, fake_run, launch, state, ticket, wait


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
    gone = ticket(tmp_path, Path("REPO"), "x", name="gone")
    gone.write_text(gone.read_text().replace('"REPO"', f'"file://{tmp_path}/missing-repo"'))  # fails at the clone
    p = cli("launch", str(gone))
    assert p.returncode == 1
    failed = next(d.name for d in (home / "runs").iterdir() if d.name.startswith("gone-"))
    p = cli("logs", failed)
    assert p.returncode == 0 and p.stdout == ""


# ---- results joined to calls -------------------------------------------------------------------


def _use(tid: str, name: str, **inp: str) -> dict[str, Any]:
    return {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}]}}


def _result(tid: str, text: str, is_error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tid, "content": text, "is_error": is_error}
    return {"type": "user", "message": {"content": [block]}}


# Claude Code stream-json: a passing, a failing, a denied call, and one whose result never came
MIXED = [
    _use("t1", "Bash", command="pytest -q"),
    _use("t2", "Bash", command="python tmp_debug.py"),  # Claude may issue calls before their results
    _result("t1", "3 passed in 0.1s"),
    _result("t2", "Exit code 3\nTraceback (most recent call last):\n  ...\nValueError: bad input", True),
    _use("t3", "Write", file_path="notes.txt", content="x"),
    _result("t3", "Claude requested permissions to write to /r/notes.txt, but you haven't granted it yet.", True),
    _use("t4", "Bash", command="sleep 600"),
    {"type": "result", "is_error": False, "permission_denials": [{"tool_name": "Write", "tool_use_id": "t3"}]},
]


def test_logs_marks_failed_denied_and_unanswered_calls(home: Path) -> None:
    fake_run("mixed-1", events=MIXED)
    p = cli("logs", "mixed-1")
    assert p.returncode == 0, p.stderr
    rows = p.stdout.splitlines()
    assert len(rows) == 4
    assert "pytest -q" in rows[0] and "[" not in rows[0]
    assert rows[1].endswith(
        "python tmp_debug.py  [error, exit 3] Exit code 3 Traceback (most recent call last): ... ValueError: bad input"
    )
    assert "notes.txt  [denied] Claude requested permissions to write" in rows[2]
    assert rows[3].endswith("sleep 600  [no result]")
    lines = [json.loads(x) for x in cli("logs", "mixed-1", "--json").stdout.splitlines()]
    facts = [(x["command"] or x["path"], x["is_error"], x["denied"], x["exit_code"], x["result_seen"]) for x in lines]
    assert facts == [
        ("pytest -q", False, False, None, True),
        ("python tmp_debug.py", True, False, 3, True),
        ("notes.txt", True, True, None, True),
        ("sleep 600", False, False, None, False),
    ]
    assert [x["output"] for x in lines][:2] == [
        "3 passed in 0.1s",
        "Exit code 3 Traceback (most recent call last): ... ValueError: bad input",
    ]
    assert lines[3]["output"] is None
    assert [x["line"] for x in lines] == rows
    follow = cli("logs", "mixed-1", "-f")  # an ended run: the same lines, then it returns
    assert follow.returncode == 0 and follow.stdout == p.stdout


def _append(run_dir: Path, *events: dict[str, Any]) -> None:
    with (run_dir / "events.jsonl").open("a") as fh:
        for e in events:
            fh.write(json.dumps({"ts": "2026-05-28T20:30:00Z", "data": e}) + "\n")


def _end(run_dir: Path) -> None:
    st = json.loads((run_dir / "state.json").read_text())
    (run_dir / "state.json").write_text(json.dumps(st | {"state": "succeeded"}))


def test_follow_prints_a_call_once_its_result_is_in_or_after_the_grace(home: Path) -> None:
    from orchestrator.runs.logs import tool_calls

    d = fake_run("live-1", state_name="running", events=[_use("a", "Bash", command="make"), _result("a", "ok")])
    rows = tool_calls(d, follow=True, poll_s=0.02, grace_s=0.6)
    first = next(rows)
    assert (first["command"], first["result_seen"], first["is_error"]) == ("make", True, False)
    # b waits for its result, and c (whose result is in) waits behind it: the log's order is kept
    _append(d, _use("b", "Bash", command="pytest"), _use("c", "Read", file_path="x.py"), _result("c", "x"))
    t0 = time.monotonic()
    b = next(rows)
    assert time.monotonic() - t0 >= 0.6
    assert (b["command"], b["result_seen"], b["is_error"]) == ("pytest", False, False)
    assert b["line"].endswith("pytest  [running]")
    assert next(rows)["path"] == "x.py"
    # b's late result is not printed again; a call read with its result goes out at once
    _append(d, _result("b", "Exit code 1\nFAILED", True), _use("e", "Bash", command="ls"), _result("e", "x.py"))
    t0 = time.monotonic()
    e = next(rows)
    assert e["command"] == "ls" and time.monotonic() - t0 < 0.5
    # the run ends: a call still waiting is printed at once, without a result
    _append(d, _use("f", "Bash", command="sleep 60"))
    _end(d)
    f = next(rows)
    assert (f["command"], f["result_seen"]) == ("sleep 60", False) and f["line"].endswith("[no result]")
    assert list(rows) == []


def test_follow_a_live_claude_run_waits_for_the_result(tmp_path: Path, repo: Path, home: Path) -> None:
    cfg = json.loads((home / "config.yaml").read_text())
    cfg["agents"]["fake"]["format"] = "claude-stream-json"
    (home / "config.yaml").write_text(json.dumps(cfg))
    use = _use("t1", "Bash", command="pytest tests/test_a.py")
    failed = _result("t1", "Exit code 2\n1 failed", True)
    run_id = launch(ticket(tmp_path, repo, f"say {json.dumps(use)}\nsleep 1.5\nsay {json.dumps(failed)}"))
    p = cli("logs", run_id, "-f", "--json", timeout=30)
    assert p.returncode == 0, p.stderr
    (line,) = [json.loads(x) for x in p.stdout.splitlines()]
    assert (line["command"], line["is_error"], line["exit_code"], line["output"]) == (
        "pytest tests/test_a.py",
        True,
        2,
        "Exit code 2 1 failed",
    )
    assert line["line"].endswith("[error, exit 2] Exit code 2 1 failed")


def test_follow_a_queued_run_counts_minutes_from_when_it_started(home: Path) -> None:
    from orchestrator.runs.logs import tool_calls

    d = fake_run("queued-1", state_name="queued")
    st = json.loads((d / "state.json").read_text())
    (d / "state.json").write_text(json.dumps(st | {"started_at": None}))  # queued: no start yet
    import threading

    rows = tool_calls(d, follow=True, poll_s=0.02, grace_s=0.1)
    got: list[dict[str, Any]] = []
    reader = threading.Thread(target=lambda: got.append(next(rows)))
    reader.start()  # following from before the run started
    time.sleep(0.5)  # (the follower is waiting for the start; nothing depends on how long)
    started = d / "state.json.new"  # written whole, then renamed: the follower never reads half of it
    started.write_text(json.dumps(st | {"state": "running", "started_at": "2026-05-28T20:29:00Z"}))
    os.replace(started, d / "state.json")
    _append(d, _use("a", "Bash", command="make"), _result("a", "ok"))  # at 20:30, a minute in
    reader.join(timeout=30)
    first = got[0]
    assert first["minute"] == 1.0 and "+   1.0m" in first["line"], first
    _end(d)
    assert list(rows) == []
