"""The orchestrator end to end: real git repos, real subprocess agents, the real supervisor."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
FAKE_AGENT = Path(__file__).resolve().parent / "fake_agent.py"
FAST = {"snapshot_every_seconds": 0.3}
STATUS_KEYS = {
    "id",
    "ticket",
    "bucket",
    "agent",
    "state",
    "reason",
    "elapsed_min",
    "expected_min",
    "region",
    "signals",
    "suspicion",
    "evidence",
    "tripped_at_min",
    "notified",
    "page_error",
    "hints",
    "last_activity_s",
    "tokens",
    "cost_usd",
    "started_at",
    "ended_at",
    "error",
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = Path(os.environ["ORCHESTRATOR_HOME"])
    h.mkdir(parents=True, exist_ok=True)
    write_config(h)
    return h


def write_config(h: Path, heartbeat: float | None = None, command: list[str] | None = None) -> None:
    cfg: dict[str, Any] = {
        "agents": {
            "fake": {
                "command": command or [sys.executable, str(FAKE_AGENT)],
                "format": "generic",
                "version_command": [sys.executable, "--version"],
            }
        }
    }
    if heartbeat is not None:
        cfg["heartbeat_seconds"] = heartbeat
    (h / "config.yaml").write_text(json.dumps(cfg))  # JSON is YAML


def ticket(tmp_path: Path, repo: Path, body: str, name: str = "t1", **front: Any) -> Path:
    fields = {"id": name, "repo": str(repo), "bucket": "small", "agent": "fake", "overrides": FAST}
    fields.update(front)
    path = tmp_path / f"{name}.md"
    path.write_text("---\n" + "".join(f"{k}: {json.dumps(v)}\n" for k, v in fields.items()) + "---\n" + body + "\n")
    return path


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )


def launch(path: Path) -> str:
    p = cli("launch", str(path))
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().splitlines()[-1]


def state(home: Path, run_id: str) -> dict[str, Any]:
    return json.loads((home / "runs" / run_id / "state.json").read_text())


def wait(pred: Callable[[], bool], timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def status_json() -> dict[str, Any]:
    p = cli("status", "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_launch_detaches_captures_log_and_snapshots(tmp_path: Path, repo: Path, home: Path) -> None:
    body = "\n".join(
        [
            'say {"tool": "Edit", "path": "src/app.py"}',
            "write tmp_probe.py print(1)",
            "write debug_out.txt data",
            'say {"tool": "Bash", "command": "python tmp_probe.py"}',
            "not json at all line",
            "sleep 2.5",
            'say {"tool": "Bash", "command": "python tmp_probe.py", "is_error": true}',
        ]
    ).replace("not json at all line", "say not json at all")
    run_id = launch(ticket(tmp_path, repo, body))
    s = state(home, run_id)
    assert s["state"] == "running", s  # the CLI has exited; the agent goes on
    agent = psutil.Process(s["agent_pid"]["pid"])
    assert agent.is_running()
    assert s["argv"][:2] == [sys.executable, str(FAKE_AGENT)] and s["argv"][-1] == body
    assert s["agent_version"].startswith("Python 3")
    run_dir = home / "runs" / run_id
    assert (run_dir / "clone" / "src" / "app.py").exists()
    branch = subprocess.run(
        ["git", "branch", "--show-current"], cwd=run_dir / "clone", capture_output=True, text=True
    ).stdout.strip()
    assert branch == "ticket/t1"
    assert (run_dir / "tracked.txt").read_text().split() == ["run_tests.sh", "src/app.py"]
    wait(lambda: state(home, run_id)["state"] == "succeeded", what="success")
    final = state(home, run_id)
    assert final["exit_code"] == 0 and final["ended_at"]
    lines = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    assert [x["data"] for x in lines] == [
        {"tool": "Edit", "path": "src/app.py"},
        {"tool": "Bash", "command": "python tmp_probe.py"},
        "not json at all",
        {"tool": "Bash", "command": "python tmp_probe.py", "is_error": True},
    ]
    assert all(x["ts"].endswith("Z") for x in lines)
    snaps = [json.loads(x) for x in (run_dir / "workspace.jsonl").read_text().splitlines()]
    assert len(snaps) >= 3
    assert snaps[0]["porcelain"] == ""
    last = snaps[-1]
    assert "?? tmp_probe.py\0" in last["porcelain"] and "?? debug_out.txt\0" in last["porcelain"]
    assert len(last["hashes"]["tmp_probe.py"]) == 40
    # debris appeared while the run was going, not only at the end
    middle = [s for s in snaps if "tmp_probe.py" in s["porcelain"]]
    assert len(middle) >= 2
    # a run folder is a corpus case: it replays
    p = cli("replay", str(run_dir), "--json")
    out = json.loads(p.stdout)
    assert out["id"] == run_id and out["spiral"] is False and out["tool_calls"] == 3
    assert p.returncode == 0


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


def test_kill_stops_the_whole_tree(tmp_path: Path, repo: Path, home: Path) -> None:
    pidfile = tmp_path / "pids.txt"
    run_id = launch(ticket(tmp_path, repo, f"spawn {pidfile}\nsleep 120"))
    wait(lambda: pidfile.exists() and len(pidfile.read_text().split()) == 3, what="the agent's children")
    pids = [int(x) for x in pidfile.read_text().split()]
    assert all(psutil.pid_exists(p) for p in pids)
    p = cli("kill", run_id)
    assert p.returncode == 0, p.stderr
    assert "killed" in p.stdout

    def gone(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    wait(lambda: all(gone(p) for p in pids), timeout=10, what="every descendant to die")
    s = state(home, run_id)
    assert s["state"] == "killed" and s["reason"] == "stopped by a person"
    again = cli("kill", run_id)
    assert again.returncode == 2 and "already ended" in again.stderr


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
    time.sleep(2.5)
    runs = status_json()["runs"]
    row = next(r for r in runs if r["id"] == run_id)
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
    os.kill(s["supervisor"]["pid"], signal.SIGKILL)
    time.sleep(0.3)
    row = next(r for r in status_json()["runs"] if r["id"] == run_id)
    assert row["state"] == "lost" and "supervising process vanished" in row["reason"]
    agent = s["agent_pid"]["pid"]
    wait(lambda: not psutil.pid_exists(agent) or psutil.Process(agent).status() == psutil.STATUS_ZOMBIE)


def test_status_json_contract_and_table(tmp_path: Path, repo: Path, home: Path) -> None:
    empty = cli("status")
    assert empty.returncode == 0 and "no runs yet" in empty.stdout
    run_id = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}'))
    wait(lambda: state(home, run_id)["state"] == "succeeded")
    out = status_json()
    assert out["version"] == 1
    assert set(out["runs"][0]) == STATUS_KEYS
    table = cli("status")
    assert run_id in table.stdout and "succeeded" in table.stdout


def test_watch_once_and_single_watcher(tmp_path: Path, repo: Path, home: Path) -> None:
    p = cli("watch", "--once")
    assert p.returncode == 0, p.stderr
    first = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "watch", "--tick", "0.2"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait(lambda: (home / "watch.lock").exists() and (home / "watch.lock").read_text().strip() == str(first.pid))
        second = cli("watch", "--once")
        assert second.returncode == 2
        assert "another watcher is already running" in second.stderr
    finally:
        first.terminate()
        first.wait(timeout=10)


@pytest.mark.parametrize(
    "front, body, message",
    [
        ({"id": "Bad_ID"}, "do it", "id must match"),
        ({"bucket": "huge"}, "do it", "bucket must be one of"),
        ({"agent": "nobody"}, "do it", "unknown agent 'nobody'"),
        ({"colour": "red"}, "do it", "unknown key 'colour'"),
        ({}, "", "no task text"),
        ({"speed": 10}, "do it", "speed is only for the demo agent"),
    ],
)
def test_malformed_ticket_is_refused(
    tmp_path: Path, repo: Path, home: Path, front: dict[str, Any], body: str, message: str
) -> None:
    p = cli("launch", str(ticket(tmp_path, repo, body, **front)))
    assert p.returncode == 2
    assert message in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())


def test_ticket_without_front_matter(tmp_path: Path, home: Path) -> None:
    path = tmp_path / "plain.md"
    path.write_text("just text\n")
    p = cli("launch", str(path))
    assert p.returncode == 2 and "front matter" in p.stderr
    p = cli("launch", "no-such-ticket")
    assert p.returncode == 2 and "no-such-ticket" in p.stderr


def test_missing_agent_binary(tmp_path: Path, repo: Path, home: Path) -> None:
    write_config(home, command=["definitely-not-an-agent-binary", "--json"])
    p = cli("launch", str(ticket(tmp_path, repo, "do it")))
    assert p.returncode == 2
    assert "definitely-not-an-agent-binary not found" in p.stderr


def test_unreachable_repo_records_a_failed_run(tmp_path: Path, home: Path) -> None:
    p = cli("launch", str(ticket(tmp_path, tmp_path / "no-such-repo", "do it")))
    assert p.returncode == 2
    assert "git clone" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    runs = list((home / "runs").iterdir())
    assert len(runs) == 1
    s = json.loads((runs[0] / "state.json").read_text())
    assert s["state"] == "failed" and "git clone" in s["reason"] and s["ended_at"]


def test_bad_config_is_refused(tmp_path: Path, repo: Path, home: Path) -> None:
    (home / "config.yaml").write_text("agents:\n  x:\n    command: nope\n")
    p = cli("launch", str(ticket(tmp_path, repo, "do it")))
    assert p.returncode == 2
    assert "config.yaml:3:" in p.stderr and "command must be a non-empty list" in p.stderr


def test_unknown_run_is_exit_2(home: Path) -> None:
    for args in (["kill", "nope"], ["logs", "nope"]):
        p = cli(*args)
        assert p.returncode == 2 and "no run 'nope'" in p.stderr
