"""`kill`: the whole process tree, gently first, even while the launch is still cloning."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from orchestrator.infra import proc
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
    assert launcher.returncode == 1  # the run was made and stopped: a failed check, not bad input
    assert out.strip() == run_id
    assert "killed during launch" in err and "no agent was started" in err
    wait(lambda: agents_alive(marker) == [], timeout=30, what="no agent left")
    assert state(home, run_id)["state"] == "killed"


def _runs(pid: int, name: str) -> bool:
    """The process or one of its descendants runs `name` (has exec'd it: not between fork and exec)."""
    try:
        p = psutil.Process(pid)
        return any(name in " ".join(q.cmdline()) for q in [p, *p.children(recursive=True)])
    except psutil.Error:
        return False


def test_kill_is_gentle_first(tmp_path: Path, repo: Path, home: Path) -> None:
    run_id = launch(ticket(tmp_path, repo, "sleep 60"))
    # a SIGINT that lands between the supervisor's fork and the agent's exec can be taken by Python's
    # handler in the child and lost at exec; the escalation then ends the run with SIGTERM (seen on a
    # host at load 12). The gentle stop is for an agent that runs, so the test waits until it does.
    running = "fake_agent.py"  # (the ticket's agent; it carries out `sleep 60` itself)
    wait(lambda: (s := state(home, run_id)).get("agent_pid") and _runs(s["agent_pid"]["pid"], running), what=running)
    assert cli("kill", run_id).returncode == 0
    s = state(home, run_id)
    assert s["state"] == "killed" and s["exit_code"] == -signal.SIGINT  # SIGINT sufficed


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_kill_tree_ends_what_the_tree_orphaned_in_its_session(tmp_path: Path) -> None:
    """A tool started in a process group of its own starts a server and exits: the server is no longer
    anyone's descendant, nor in the agent's group, but it is still in the agent's session."""
    pidfile = tmp_path / "orphan.pid"
    tool = (
        "import subprocess, sys\n"
        "g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(g.pid))\n"
    )
    agent_src = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {tool!r}], process_group=0).wait()\n"
        "time.sleep(600)\n"
    )
    agent = subprocess.Popen([sys.executable, "-c", agent_src], start_new_session=True)
    try:
        wait(lambda: pidfile.exists() and pidfile.read_text().strip() != "", what="the orphaned server")
        orphan = int(pidfile.read_text())
        descendants = lambda: [c.pid for c in psutil.Process(agent.pid).children(recursive=True)]  # noqa: E731
        wait(lambda: orphan not in descendants(), what="the server's tool to exit")
        assert os.getpgid(orphan) != os.getpgid(agent.pid)

        assert proc.kill_tree(proc.ProcRef.of(agent.pid), grace_s=1.0)
        assert _gone(orphan), "the orphaned server survived the tree kill"
    finally:
        agent.kill()
        agent.wait()
        if pidfile.exists() and pidfile.read_text().strip():
            with contextlib.suppress(psutil.Error):
                psutil.Process(int(pidfile.read_text())).kill()


def test_kill_ends_what_the_agent_abandoned(tmp_path: Path, repo: Path, home: Path) -> None:
    pidfile = tmp_path / "abandoned.txt"
    run_id = launch(ticket(tmp_path, repo, f"abandon {pidfile}\nsleep 120"))
    wait(lambda: pidfile.exists() and pidfile.read_text().strip() != "", what="the abandoned process")
    abandoned = int(pidfile.read_text())
    assert os.getsid(abandoned) == abandoned  # out of the agent's session: only its adopter can find it
    k = cli("kill", run_id)
    assert k.returncode == 0, k.stderr
    assert _gone(abandoned), "kill returned with the abandoned process still running"
    assert state(home, run_id)["state"] == "killed"
