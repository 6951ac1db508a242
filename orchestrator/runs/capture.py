"""The agent's output, captured: each line as a timestamped envelope in events.jsonl, until the agent is
gone; and the first file that could not be written (which ends the run)."""

from __future__ import annotations

import os
import selectors
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from orchestrator.infra import proc
from orchestrator.record import state_file
from orchestrator.record.clock import RunClock
from spiral.envelope import make_envelope
from spiral.outcome import Outcome

_EXIT_POLL_S = 0.5  # how often a quiet capture looks whether the agent exited
AFTER_EXIT_DRAIN_S = 2.0  # how long output is still read once the agent exited (what a leftover writes)


class WriteTrouble:
    """The first file the supervisor could not write (a full or read-only disk), which ends the run.

    Nothing the agent does is captured once its log cannot be written, so the agent is stopped and
    the run ends `failed` with this reason, rather than the supervisor dying and the run being `lost`.
    """

    def __init__(self) -> None:
        self.reason: str | None = None
        self.agent: proc.ProcRef | None = None
        self._lock = threading.Lock()

    def hit(self, what: str, exc: OSError) -> None:
        with self._lock:
            if self.reason is not None:
                return
            kind = "disk full" if exc.errno in state_file.FULL else "disk error"
            self.reason = f"{kind}: cannot write {what} ({exc.strerror or exc})"
            agent = self.agent
        if agent is not None:
            proc.kill_tree(agent)


def _payload(line: bytes) -> Any:
    """A native output line as data (a JSON value, or the text of a non-JSON line)."""
    text = line.rstrip(b"\r\n")
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text.decode("utf-8", errors="replace")


def capture(child: subprocess.Popen[bytes], events: Path, clock: RunClock, trouble: WriteTrouble) -> Outcome:
    """Each non-blank output line of the agent, as a timestamped envelope, flushed as it comes;
    what the lines said about the run's outcome. A line that cannot be written stops the agent."""
    assert child.stdout is not None
    outcome = Outcome()
    try:
        with events.open("ab") as out:
            for line in _lines_while_alive(child):
                if not line.strip():
                    continue
                now = time.time()
                data = _payload(line)
                outcome.feed(clock.at(now), data)
                out.write(make_envelope(clock.iso(now), data, line))
                out.flush()
    except OSError as exc:
        trouble.hit(events.name, exc)
    return outcome


def _lines_while_alive(child: subprocess.Popen[bytes], drain_s: float = AFTER_EXIT_DRAIN_S) -> Iterator[bytes]:
    """The agent's output lines until its stdout closes, or until `drain_s` after the agent exited.

    The agent's exit is what ends the capture: a process it left running (a server started with `&`)
    may hold its stdout open for as long as it lives, and waiting for that EOF would keep a finished
    run `running`. What the agent wrote before it exited is still read; the last line may lack its
    newline.
    """
    assert child.stdout is not None
    fd = child.stdout.fileno()
    exited_at: float | None = None
    parts: list[bytes] = []  # the line being read, in pieces (a long line is joined once, not per read)
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            if exited_at is None and child.poll() is not None:
                exited_at = time.monotonic()
            if exited_at is None:
                wait_s = _EXIT_POLL_S
            else:
                wait_s = exited_at + drain_s - time.monotonic()
                if wait_s <= 0:
                    break
            if not sel.select(wait_s):
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            if b"\n" not in chunk:
                parts.append(chunk)
                continue
            *lines, rest = (b"".join(parts) + chunk if parts else chunk).split(b"\n")
            parts = [rest] if rest else []
            for line in lines:
                yield line + b"\n"
    if parts:
        yield b"".join(parts)
