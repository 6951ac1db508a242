"""What an agent leaves running when it exits: the run still ends, and the leftovers end with it."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from orchestrator.runs.capture import _lines_while_alive
from tests.helpers import launch, state, ticket, wait


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _ended(home: Path, run_id: str) -> bool:
    return state(home, run_id)["state"] not in ("launching", "running")


def test_a_run_ends_what_its_agent_abandoned(tmp_path: Path, repo: Path, home: Path) -> None:
    """A process the agent started in a session of its own and forgot: adopted by the supervisor (not
    by init), it ends when the agent does, and the supervisor's log says so."""
    pidfile = tmp_path / "abandoned.txt"
    run_id = launch(ticket(tmp_path, repo, f"abandon {pidfile}\nexit 0"))
    wait(lambda: state(home, run_id)["state"] not in ("launching", "running"), timeout=60, what="the run to end")
    abandoned = int(pidfile.read_text())
    wait(lambda: _gone(abandoned), timeout=10, what="the abandoned process to end")
    log = (home / "runs" / run_id / "supervisor.log").read_text()
    assert f"supervisor: stopped 1 process the agent started: {abandoned} " in log, log


def test_a_daemon_that_left_the_clone_is_spared(tmp_path: Path, repo: Path, home: Path) -> None:
    """A daemon working outside the clone looks like a shared one (gpg-agent, an ssh master): other
    runs may use it, so it is only listed."""
    pidfile = tmp_path / "abandoned.txt"
    run_id = launch(ticket(tmp_path, repo, f"abandon {pidfile} {tmp_path}\nexit 0"))
    try:
        wait(lambda: _ended(home, run_id), timeout=60, what="the run to end")
        abandoned = int(pidfile.read_text())
        log = (home / "runs" / run_id / "supervisor.log").read_text()
        assert f"left running (not in the clone) 1 process the agent started: {abandoned} " in log, log
        assert not _gone(abandoned)
    finally:
        for pid in pidfile.read_text().split() if pidfile.exists() else []:
            with contextlib.suppress(psutil.Error):
                psutil.Process(int(pid)).kill()


def test_a_run_ends_when_its_agent_exits_though_a_leftover_holds_its_output(
    tmp_path: Path, repo: Path, home: Path
) -> None:
    """`spawn` children inherit the agent's stdout and sleep 600 s: the capture stops once the agent
    exited (after a short drain), not at an EOF that would come only when they die."""
    pidfile = tmp_path / "pids.txt"
    say = 'say {"tool": "Bash", "command": "echo last words"}'
    # the sleep: time for the grandchild to be recorded; the write: the work that makes exit 0 a success
    body = f"spawn {pidfile}\nsleep 3\n{say}\nwrite done.txt ok\nexit 0"
    started = time.monotonic()
    run_id = launch(ticket(tmp_path, repo, body))
    wait(lambda: _ended(home, run_id), timeout=60, what="the run to end")
    assert time.monotonic() - started < 50, "the run waited for its leftovers' EOF"
    s = state(home, run_id)
    assert s["state"] == "succeeded" and s["reason"] == "agent exited 0", s
    events = (home / "runs" / run_id / "events.jsonl").read_text()
    assert "last words" in events  # what the agent wrote before it exited was still captured
    leftovers = {int(x) for x in pidfile.read_text().split()} - {s["agent_pid"]["pid"]}
    assert len(leftovers) == 2  # the child and the grandchild
    wait(lambda: all(_gone(p) for p in leftovers), timeout=10, what="the leftovers to end")
    log = (home / "runs" / run_id / "supervisor.log").read_text()
    assert "supervisor: stopped 2 processes the agent started" in log, log


def _read_all(argv: list[str], drain_s: float = 1.0) -> list[bytes]:
    child = subprocess.Popen(argv, stdout=subprocess.PIPE)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.extend(_lines_while_alive(child, drain_s)), daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), "the capture did not end"
    child.wait(timeout=10)
    return got


def test_the_capture_keeps_lines_whole_across_reads() -> None:
    """Lines written in pieces, a CRLF, a line much longer than one read, and a last line without its
    newline come out as written."""
    big = "x" * 300_000
    src = (
        "import sys, time\n"
        "w = sys.stdout.buffer\n"
        "w.write(b'{\"a\":'); w.flush(); time.sleep(0.2)\n"
        "w.write(b' 1}\\r\\nsecond\\n'); w.flush(); time.sleep(0.2)\n"
        f"w.write(b'x' * {len(big)} + b'\\n'); w.flush()\n"
        "w.write(b'no newline'); w.flush()\n"
    )
    lines = _read_all([sys.executable, "-c", src])
    assert lines == [b'{"a": 1}\r\n', b"second\n", big.encode() + b"\n", b"no newline"]


def test_the_capture_ends_after_the_agent_though_a_leftover_keeps_writing(tmp_path: Path) -> None:
    """The agent exits; its background child keeps writing to the same stdout for 10 minutes. The
    capture reads what came before the agent's exit and stops within the drain."""
    marker = tmp_path / "child.pid"
    src = (
        "import subprocess, sys\n"
        "c = subprocess.Popen([sys.executable, '-c', 'import time\\nwhile True: print(\"tick\", flush=True); "
        "time.sleep(0.05)'])\n"
        f"open({str(marker)!r}, 'w').write(str(c.pid))\n"
        "print('agent done', flush=True)\n"
    )
    try:
        lines = _read_all([sys.executable, "-c", src], drain_s=1.0)
        assert b"agent done\n" in lines
        assert set(lines) <= {b"agent done\n", b"tick\n"}
    finally:
        if marker.exists():
            with contextlib.suppress(psutil.Error):
                psutil.Process(int(marker.read_text())).kill()
