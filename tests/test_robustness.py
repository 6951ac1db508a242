"""Races, crashes and broken inputs around runs: nothing runs unseen, nothing hides."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.test_orchestrator import ROOT, cli, launch, state, status_json, ticket, wait, write_config

REAL_GIT = shutil.which("git") or "/usr/bin/git"


def home() -> Path:
    h = Path(os.environ["ORCHESTRATOR_HOME"])
    h.mkdir(parents=True, exist_ok=True)
    write_config(h)
    return h


def agents_alive(marker: str) -> list[int]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in p.info["cmdline"] or []):
                out.append(p.pid)
        except psutil.Error:
            continue
    return out


def test_kill_during_clone_starts_no_agent(tmp_path: Path, repo: Path) -> None:
    h = home()
    slow = tmp_path / "bin"
    slow.mkdir()
    (slow / "git").write_text(f'#!/bin/sh\nif [ "$1" = clone ]; then sleep 3; fi\nexec {REAL_GIT} "$@"\n')
    (slow / "git").chmod(0o755)
    marker = f"marker-{os.getpid()}-clone"
    t = ticket(tmp_path, repo, f"# {marker}\nsleep 60")
    env = {**os.environ, "PATH": f"{slow}:{os.environ['PATH']}", "GIT_PYTHON_GIT_EXECUTABLE": str(slow / "git")}
    launcher = subprocess.Popen(
        [sys.executable, "-m", "orchestrator", "launch", str(t)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait(lambda: (h / "runs").exists() and any((h / "runs").iterdir()), what="the run folder")
    run_id = next((h / "runs").iterdir()).name
    k = cli("kill", run_id)
    assert k.returncode == 0, k.stderr
    out, err = launcher.communicate(timeout=60)
    assert launcher.returncode == 2
    assert "killed during launch" in err and "no agent was started" in err
    time.sleep(1)
    assert agents_alive(marker) == []
    assert state(h, run_id)["state"] == "killed"


def test_kill_is_gentle_first(tmp_path: Path, repo: Path) -> None:
    h = home()
    run_id = launch(ticket(tmp_path, repo, "sleep 60"))
    assert cli("kill", run_id).returncode == 0
    s = state(h, run_id)
    assert s["state"] == "killed" and s["exit_code"] == -signal.SIGINT  # SIGINT sufficed


def test_interrupted_kill_and_dead_supervisor_still_end_the_run(tmp_path: Path, repo: Path) -> None:
    h = home()
    run_id = launch(ticket(tmp_path, repo, "sleep 60"))
    path = h / "runs" / run_id / "state.json"
    s = json.loads(path.read_text())
    s["stop_requested"] = {"as": "killed", "reason": "stopped by a person", "at": s["created_at"]}
    path.write_text(json.dumps(s))  # as if `kill` died right after asking
    os.kill(s["supervisor"]["pid"], signal.SIGKILL)
    row = next(r for r in status_json()["runs"] if r["id"] == run_id)
    assert row["state"] == "killed" and "supervisor vanished" in row["reason"]
    agent = s["agent_pid"]["pid"]
    wait(lambda: not psutil.pid_exists(agent) or psutil.Process(agent).status() == psutil.STATUS_ZOMBIE)


def test_a_broken_run_is_shown_not_hidden(tmp_path: Path, repo: Path) -> None:
    h = home()
    good = launch(ticket(tmp_path, repo, 'say {"tool": "Bash", "command": "ls"}'))
    wait(lambda: state(h, good)["state"] == "succeeded")
    bad = h / "runs" / "zz-broken"
    bad.mkdir()
    (bad / "state.json").write_text(
        '{"run_id": "zz-broken", "state": "running", "bucket": "huge", "format": "generic"}'
    )
    p = cli("status", "--json")
    assert p.returncode == 0
    rows = {r["id"]: r for r in json.loads(p.stdout)["runs"]}
    assert rows[good]["error"] is None
    assert rows["zz-broken"]["error"] and "zz-broken could not be checked" in p.stderr
    table = cli("status")
    assert "error" in table.stdout and "zz-broken" in table.stdout
    assert cli("watch", "--once").returncode == 0


def test_a_run_keeps_the_settings_it_launched_with(tmp_path: Path, repo: Path) -> None:
    home()
    run_id = launch(ticket(tmp_path, repo, "sleep 20"))
    changed = tmp_path / "buckets.yaml"
    changed.write_text(
        (ROOT / "buckets.yaml")
        .read_text()
        .replace(
            "small:  {expected_min: 20, soft_start_min: 30,  stuck_min: 35}",
            "small:  {expected_min: 0.001, soft_start_min: 0.002,  stuck_min: 0.003}",
        )
    )
    p = subprocess.run(
        [sys.executable, "-m", "orchestrator", "status", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "ORCHESTRATOR_BUCKETS": str(changed)},
        timeout=60,
    )
    row = next(r for r in json.loads(p.stdout)["runs"] if r["id"] == run_id)
    assert row["state"] == "running" and row["expected_min"] == 20 and row["region"] == "healthy"
    cli("kill", run_id)


def test_logs_json_and_logs_of_a_run_that_never_started(tmp_path: Path, repo: Path) -> None:
    h = home()
    run_id = launch(ticket(tmp_path, repo, 'say {"tool": "Edit", "path": "src/app.py"}'))
    wait(lambda: state(h, run_id)["state"] == "succeeded")
    lines = [json.loads(x) for x in cli("logs", run_id, "--json").stdout.splitlines()]
    assert lines == [{**lines[0], "version": 1, "tool": "Edit", "path": "src/app.py", "is_error": False}]
    p = cli("launch", str(ticket(tmp_path, tmp_path / "missing-repo", "x", name="gone")))
    assert p.returncode == 2
    failed = next(d.name for d in (h / "runs").iterdir() if d.name.startswith("gone-"))
    p = cli("logs", failed)
    assert p.returncode == 0 and p.stdout == ""
