"""`launch`: a fresh clone, a detached supervisor, the captured log and snapshots; refused tickets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.helpers import FAKE_AGENT, cli, launch, state, ticket, wait, write_config


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
    run_id = launch(ticket(tmp_path, repo, body, work=False))  # the script as written: its argv is checked
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
    assert "definitely-not-an-agent-binary not on PATH (is it installed and on PATH?)" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_unreachable_repo_records_a_failed_run(tmp_path: Path, home: Path) -> None:
    missing = cli("launch", str(ticket(tmp_path, tmp_path / "no-such-repo", "do it")))  # a local path: checked first
    assert missing.returncode == 2 and "no such folder" in missing.stderr and not (home / "runs").exists()
    t = ticket(tmp_path, Path("REPO"), "do it")
    t.write_text(t.read_text().replace('"REPO"', f'"file://{tmp_path}/no-such-repo"'))  # found only by the clone
    p = cli("launch", str(t))
    assert p.returncode == 1  # a run was made and failed: a failed check, as with several tickets
    assert "git clone" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    runs = list((home / "runs").iterdir())
    assert len(runs) == 1 and p.stdout.strip() == runs[0].name  # the id, to look the run up by
    s = json.loads((runs[0] / "state.json").read_text())
    assert s["state"] == "failed" and "git clone" in s["reason"] and s["ended_at"]
    as_json = cli("launch", str(t), "--json")
    assert as_json.returncode == 1
    row = json.loads(as_json.stdout)
    assert row["state"] == "failed" and "git clone" in row["reason"] and row["run_id"] in row["run_dir"]


def test_bad_config_is_refused(tmp_path: Path, repo: Path, home: Path) -> None:
    (home / "config.yaml").write_text("agents:\n  x:\n    command: nope\n")
    p = cli("launch", str(ticket(tmp_path, repo, "do it")))
    assert p.returncode == 2
    assert "config.yaml:3:" in p.stderr and "command must be a non-empty list" in p.stderr


def test_a_ticket_folder_and_a_linked_repo(tmp_path: Path, repo: Path, home: Path) -> None:
    import os

    link = tmp_path / "link-to-repo"
    link.symlink_to(repo)
    folder = tmp_path / "t-folder"
    folder.mkdir()
    ticket(folder, link, "exit 0").rename(folder / "ticket.md")  # a ticket's own folder, as --all finds it
    p = cli("launch", str(folder))
    assert p.returncode == 0, p.stderr
    run_id = p.stdout.strip().splitlines()[-1]
    # one repository, one spelling: the link is recorded as what it points at (max_parallel_per_repo)
    assert json.loads((home / "runs" / run_id / "state.json").read_text())["repo"] == os.path.realpath(repo)
    empty = tmp_path / "empty"
    empty.mkdir()
    p = cli("launch", str(empty))
    assert p.returncode == 2 and "a folder, with no ticket.md in it" in p.stderr
    # an id is still looked up in tickets_dir when a folder of that name happens to be where launch runs
    tickets_dir = tmp_path / "tickets"
    tickets_dir.mkdir()
    ticket(tickets_dir, repo, "exit 0", name="t9")
    cfg = json.loads((home / "config.yaml").read_text())
    (home / "config.yaml").write_text(json.dumps(cfg | {"tickets_dir": str(tickets_dir)}))
    (tmp_path / "t9").mkdir()
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "launch", "t9"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)
    p = cli("launch", str(fifo))
    assert p.returncode == 2 and "not a regular file" in p.stderr


def test_a_nul_byte_the_os_would_refuse_is_refused_before_a_run_exists(tmp_path: Path, repo: Path, home: Path) -> None:
    """Issue 38: a NUL byte in the body of a ticket whose agent takes it as an argument passed `launch`
    (exit 0) and then failed the run with `supervisor error: ValueError: embedded null byte`."""
    write_config(home)
    p = cli("launch", str(ticket(tmp_path, repo, "say hi\x00 there")))
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "holds a NUL byte" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (home / "runs").exists() or not any((home / "runs").iterdir())
