"""`kill`: the whole process tree, gently first, even while the launch is still cloning."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.helpers import ROOT, cli, launch, state, ticket, wait

REAL_GIT = shutil.which("git") or "/usr/bin/git"


def agents_alive(marker: str) -> list[int]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(marker in part for part in p.info["cmdline"] or []):
                out.append(p.pid)
        except psutil.Error:
            continue
    return out


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


def test_kill_during_clone_starts_no_agent(tmp_path: Path, repo: Path, home: Path) -> None:
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
    wait(lambda: (home / "runs").exists() and any((home / "runs").iterdir()), what="the run folder")
    run_id = next((home / "runs").iterdir()).name
    k = cli("kill", run_id)
    assert k.returncode == 0, k.stderr
    out, err = launcher.communicate(timeout=60)
    assert launcher.returncode == 2
    assert "killed during launch" in err and "no agent was started" in err
    time.sleep(1)
    assert agents_alive(marker) == []
    assert state(home, run_id)["state"] == "killed"


def test_kill_is_gentle_first(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, "sleep 60"))
    assert cli("kill", run_id).returncode == 0
    s = state(home, run_id)
    assert s["state"] == "killed" and s["exit_code"] == -signal.SIGINT  # SIGINT sufficed
