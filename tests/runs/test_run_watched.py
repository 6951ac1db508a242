"""proc.run_watched: a command whose stderr shows its progress, ended when it shows none or when asked."""

from __future__ import annotations

import os
import time
from pathlib import Path

from orchestrator.infra import proc
from tests.helpers import wait


def test_progress_keeps_it_going_and_silence_ends_it() -> None:
    rc, err, why = proc.run_watched(
        ["sh", "-c", "for i in 1 2 3 4; do echo step $i >&2; sleep 0.5; done"], env={}, stall_s=1.5
    )
    assert (rc, why) == (0, None) and err.count(b"step") == 4  # 2 s in all, never 1.5 s without a word
    t0 = time.monotonic()
    rc, err, why = proc.run_watched(["sh", "-c", "echo hello >&2; sleep 30"], env={}, stall_s=1)
    assert why == "no progress for 1 s" and rc != 0 and err == b"hello\n" and time.monotonic() - t0 < 10


def test_a_stop_ends_it_and_its_whole_session() -> None:
    t0 = time.monotonic()
    marker = f"run-watched-{os.getpid()}"
    rc, _, why = proc.run_watched(
        ["bash", "-c", f"sleep 30 & exec -a {marker} sleep 31"],
        env={},
        stall_s=60,
        stop=lambda: time.monotonic() - t0 > 1,
    )
    assert why == "stopped" and time.monotonic() - t0 < 10
    wait(
        lambda: not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline(p).startswith(marker)],
        timeout=30,
        what="the command's whole tree gone",
    )


def test_a_process_that_leaves_stderr_open_behind_it_is_not_waited_for(tmp_path: Path) -> None:
    # it exits; a child in a session of its own keeps stderr open and writes to it later
    t0 = time.monotonic()
    done = tmp_path / "late-writer-done"
    rc, err, why = proc.run_watched(
        ["sh", "-c", f"setsid sh -c 'sleep 4; (echo late >&2); touch {done}' & echo progress >&2; exit 0"],
        env={},
        stall_s=60,
    )
    assert (rc, why) == (0, None) and err == b"progress\n" and time.monotonic() - t0 < 4
    r, w = os.pipe()  # the descriptor it read from is closed: a pipe opened now never has its data taken
    try:
        wait(done.exists, timeout=30, what="the late writer to have written")
        os.write(w, b"mine")
        assert os.read(r, 4) == b"mine"
    finally:
        os.close(r)
        os.close(w)


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
