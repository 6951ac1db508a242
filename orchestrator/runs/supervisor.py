"""The per-run supervisor: a detached process that owns one agent.

`python -m orchestrator.runs.supervisor RUN_DIR` starts the agent from the argv in
state.json (never through a shell), captures each output line as a
timestamped envelope in events.jsonl (flushed per line), snapshots the clone
every `snapshot_every` seconds, and records the ending atomically. It runs in
its own session, so it outlives the CLI that launched it and any watcher.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from orchestrator.infra import git, proc
from orchestrator.record import case_file, state_file
from orchestrator.record.clock import RunClock
from spiral.envelope import make_envelope

_STDERR_TAIL = 400


def _envelope(ts_iso: str, line: bytes) -> bytes:
    """A native output line as the envelope the corpus format wants (non-JSON kept as text)."""
    text = line.rstrip(b"\r\n")
    try:
        data: Any = orjson.loads(text)
    except orjson.JSONDecodeError:
        data = text.decode("utf-8", errors="replace")
    return make_envelope(ts_iso, data)


class Snapshotter(threading.Thread):
    def __init__(self, clone: Path, out: Path, clock: RunClock, every_real_s: float) -> None:
        super().__init__(daemon=True)
        self.clone, self.out, self.clock, self.every = clone, out, clock, every_real_s
        self.stop_event = threading.Event()
        self.errors = 0

    def take(self) -> None:
        try:
            text, hashes = git.snapshot(self.clone)
        except (proc.CommandError, OSError, subprocess.SubprocessError):
            self.errors += 1  # a slow or broken git must not kill the snapshot thread
            return
        line = orjson.dumps({"ts": self.clock.iso(time.time()), "porcelain": text, "hashes": hashes})
        with self.out.open("ab") as fh:
            fh.write(line + b"\n")

    def run(self) -> None:
        while not self.stop_event.wait(self.every):
            self.take()


def _agent_version(cmd: list[str], clone: Path) -> str | None:
    if not cmd:
        return None
    try:
        rc, out, err = proc.run(cmd, cwd=clone, check=False, timeout=20)
    except (proc.CommandError, subprocess.TimeoutExpired, OSError):
        return None
    text = (out or err).decode(errors="replace").strip().splitlines()
    return text[0][:200] if rc == 0 and text else None


def supervise(run_dir: Path) -> int:
    clone = run_dir / "clone"
    me = proc.ProcRef.of(os.getpid())

    def register(s: dict[str, Any]) -> bool:
        if s.get("state") != "launching" or s.get("stop_requested"):
            return False  # stopped before the agent started: there is nothing to supervise
        s["supervisor"] = me.to_dict()
        return True

    state = state_file.update(run_dir, register)
    if state.get("supervisor") != me.to_dict():
        return 0
    clock = RunClock.of(state)
    argv = list(state["argv"])
    version = _agent_version(list(state.get("version_command") or []), clone)
    stdin_mode = subprocess.PIPE if state.get("prompt_mode") == "stdin" else subprocess.DEVNULL
    stderr_path = run_dir / "agent.stderr"
    try:
        with stderr_path.open("wb") as err_fh:
            child = subprocess.Popen(
                argv,
                cwd=clone,
                stdin=stdin_mode,
                stdout=subprocess.PIPE,
                stderr=err_fh,
                env=proc.clean_env(state.get("env") or {}),
                start_new_session=True,
            )
    except OSError as exc:
        why = "agent binary not found" if isinstance(exc, FileNotFoundError) else "agent could not start"
        _finish(run_dir, clock, "failed", f"{why}: {argv[0]}: {exc.strerror}")
        return 1
    agent = proc.ProcRef.of(child.pid)

    def started(s: dict[str, Any]) -> bool:
        s["agent_pid"] = agent.to_dict()
        if s.get("state") == "launching" and not s.get("stop_requested"):
            s.update(state="running", agent_version=version)
        return True

    state = state_file.update(run_dir, started)
    if state.get("state") != "running":
        proc.kill_tree(agent)  # a stop arrived while the agent was starting
    if stdin_mode == subprocess.PIPE and child.stdin is not None:
        try:
            child.stdin.write(str(state.get("prompt", "")).encode())
            child.stdin.close()
        except BrokenPipeError:
            pass
    every = float(state.get("snapshot_every_s") or 30.0) / clock.scale
    snapper = Snapshotter(clone, run_dir / "workspace.jsonl", clock, every)
    snapper.take()
    snapper.start()
    assert child.stdout is not None
    with (run_dir / "events.jsonl").open("ab") as events:
        for line in child.stdout:
            if not line.strip():
                continue
            events.write(_envelope(clock.iso(time.time()), line))
            events.flush()
    rc = child.wait()
    snapper.stop_event.set()
    snapper.join(timeout=5)
    snapper.take()
    if rc == 0:
        how, reason = "succeeded", "agent exited 0"
    elif rc < 0:
        how, reason = "failed", f"agent killed by signal {signal.Signals(-rc).name}"
    else:
        how, reason = "failed", f"agent exited {rc}" + _stderr_hint(stderr_path)
    _finish(run_dir, clock, how, reason, exit_code=rc)
    return 0


def _stderr_hint(path: Path) -> str:
    try:
        tail = path.read_bytes()[-_STDERR_TAIL:].decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return f": {tail[-1][:200]}" if tail else ""


def _finish(run_dir: Path, clock: RunClock, how: str, reason: str, **extra: Any) -> None:
    """Record the ending, unless someone asked for this stop (kill, stall) and so names it."""

    def change(s: dict[str, Any]) -> bool:
        req = s.get("stop_requested")
        changed = False
        if isinstance(req, dict) and req.get("as") in state_file.ENDED:
            changed = state_file.end(s, req["as"], str(req.get("reason", "")), **extra)
        else:
            changed = state_file.end(s, how, reason, **extra)
        if "exit_code" in extra and s.get("exit_code") is None:
            s["exit_code"] = extra["exit_code"]
            changed = True
        return changed

    state = state_file.update(run_dir, change)
    case_file.write_run_case(run_dir, state, clock.at(time.time()))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        sys.stderr.write("usage: python -m orchestrator.runs.supervisor RUN_DIR\n")
        return 2
    run_dir = Path(argv[1])
    try:
        return supervise(run_dir)
    except Exception as exc:
        state = state_file.read(run_dir)
        agent = proc.ProcRef.from_dict(state.get("agent_pid"))
        if agent is not None:
            proc.kill_tree(agent)  # nobody would capture its output or record its end
        _finish(run_dir, RunClock.of(state), "failed", f"supervisor error: {type(exc).__name__}: {exc}")
        raise


if __name__ == "__main__":
    sys.exit(main(sys.argv))
