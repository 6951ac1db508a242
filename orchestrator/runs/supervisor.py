"""The per-run supervisor: a detached process that owns one agent.

`python -m orchestrator.runs.supervisor RUN_DIR` starts the agent from the argv in
state.json (never through a shell), captures each output line as a
timestamped envelope in events.jsonl (flushed per line), snapshots the clone
every `snapshot_every` seconds, and records the ending atomically. When the
agent claims success and the ticket has a `verify:` check, it runs that in the
clone first, and the check decides. It runs in its own session, so it outlives
the CLI that launched it and any watcher.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import orjson

from orchestrator.infra import git, proc
from orchestrator.notify.pages import redact
from orchestrator.record import case_file, state_file
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import RunDir
from orchestrator.record.model import ENDED, AgentClaim, AgentReport, Delivered, RunRecord, VerifyResult
from orchestrator.runs import delivery, endings
from orchestrator.runs.capture import WriteTrouble, capture
from orchestrator.runs.checks import SETUP_LOG, setup_failed, stop_asked, verdict, verify
from orchestrator.runs.copy_in import copy_in
from orchestrator.runs.overdue import past_stuck
from spiral.outcome import Outcome

_STDERR_TAIL = 400


class Snapshotter(threading.Thread):
    def __init__(self, clone: Path, out: Path, clock: RunClock, every_real_s: float, trouble: WriteTrouble) -> None:
        super().__init__(daemon=True)
        self.clone, self.out, self.clock, self.every = clone, out, clock, every_real_s
        self.trouble = trouble
        self.stop_event = threading.Event()
        self.errors = 0

    def take(self) -> None:
        try:
            text, hashes = git.snapshot(self.clone)
        except (proc.CommandError, OSError, subprocess.SubprocessError):
            self.errors += 1  # a slow or broken git must not kill the snapshot thread
            return
        line = orjson.dumps({"ts": self.clock.iso(time.time()), "porcelain": text, "hashes": hashes})
        try:
            with self.out.open("ab") as fh:
                fh.write(line + b"\n")
        except OSError as exc:
            self.stop_event.set()
            self.trouble.hit(self.out.name, exc)

    def run(self) -> None:
        while not self.stop_event.wait(self.every):
            self.take()
            if self.stop_event.is_set():
                break
            agent = self.trouble.agent  # never waited for here: the main thread's Popen keeps its exit status
            proc.reap_adopted({agent.pid} if agent is not None else set())


def _agent_version(cmd: list[str], clone: Path) -> str | None:
    if not cmd:
        return None
    try:
        rc, out, err = proc.run(cmd, cwd=clone, check=False, timeout=20)
    except (proc.CommandError, subprocess.TimeoutExpired, OSError):
        return None
    text = (out or err).decode(errors="replace").strip().splitlines()
    return text[0][:200] if rc == 0 and text else None


def _feed(pipe: IO[bytes], data: bytes) -> None:
    """The prompt on the agent's stdin, then end of file."""
    try:
        pipe.write(data)
        pipe.close()
    except (BrokenPipeError, OSError, ValueError):
        pass  # it exited (or closed its stdin) without reading it all


def _register(me: proc.ProcRef, admission: int | None = None) -> Callable[[RunRecord], bool]:
    def change(r: RunRecord) -> bool:
        if r.state != "launching" or r.stop_requested is not None:
            return False  # stopped before the agent started: there is nothing to supervise
        if admission is not None and r.admission != admission:
            return False  # spawned for an earlier start of this run (requeued since): not this one's
        if r.supervisor is not None and r.supervisor != me and r.supervisor.alive():
            return False  # another supervisor took this run first (a start retried from the queue): one agent only
        r.supervisor = me
        return True

    return change


def _started(agent: proc.ProcRef, version: str | None, start: str | None) -> Callable[[RunRecord], bool]:
    def change(r: RunRecord) -> bool:
        r.agent_pid, r.start_commit = agent, start
        if r.state == "launching" and r.stop_requested is None:
            r.state, r.agent_version = "running", version
        return True

    return change


def _ending(rc: int, outcome: Outcome, stderr_path: Path) -> tuple[str, str]:
    """The ending the agent's own log supports, else the one its exit code implies."""
    told = outcome.ending(rc) if rc >= 0 else None
    if told is not None:
        return told
    if rc == 0:
        denied = outcome.denied
        note = f" ({denied} of {outcome.tool_calls} tool calls denied)" if denied else ""
        return "succeeded", "agent exited 0" + note
    if rc < 0:
        return "failed", f"agent killed by signal {signal.Signals(-rc).name}"
    return "failed", f"agent exited {rc}" + _stderr_hint(stderr_path)


def report(outcome: Outcome) -> AgentReport:
    return AgentReport(
        tool_calls=outcome.tool_calls,
        denied_calls=outcome.denied,
        final_seen=outcome.final_seen,
        final_error=outcome.final_error,
        api_error_status=outcome.final_status,
        provider_episodes=len(outcome.episodes),
    )


def supervise(run_dir: Path, admission: int | None = None) -> int:
    rd = RunDir.of(run_dir)
    me = proc.ProcRef.of(os.getpid())
    record = state_file.update(rd, _register(me, admission))
    if record.supervisor != me:
        return 0
    proc.become_subreaper()  # what the agent abandons is adopted here, to be ended with the agent
    clock = RunClock.of(record)
    if record.copy and (why := copy_in(rd.clone, record.copy)) is not None:  # files from outside the repo
        _finish(rd, clock, "failed", why)
        return 1
    if record.setup:  # the ticket's set-up, in the clone, before the agent exists: a failure ends the run
        done = verify(rd, record.setup, record.setup_timeout_s, SETUP_LOG)
        why = "stopped during setup" if done is None else setup_failed(done, record.setup_timeout_s)
        if why is not None:
            _finish(rd, clock, "failed", why)  # (a stop asked for, kill or liveness, keeps its own ending)
            return 1
    version = record.agent_version or _agent_version(record.version_command, rd.clone)
    stdin_pipe = record.prompt_mode == "stdin"
    trouble = WriteTrouble()
    every = (record.snapshot_every_s or 30.0) / clock.scale
    snapper = Snapshotter(rd.clone, rd.workspace, clock, every, trouble)
    snapper.take()  # the clone as the agent finds it, before it can touch anything
    start = _head(rd.clone)  # what the run's changes are counted from (runs/endings.py)
    if trouble.reason is not None:  # the run folder cannot be written: do not start an agent nobody can watch
        _finish(rd, clock, "failed", trouble.reason)
        return 1
    try:
        with rd.agent_stderr.open("wb") as err_fh:
            child = proc.start_piped(record.argv, cwd=rd.clone, stderr=err_fh, env=record.env, stdin_pipe=stdin_pipe)
    except OSError as exc:
        why = "agent binary not found" if isinstance(exc, FileNotFoundError) else "agent could not start"
        _finish(rd, clock, "failed", f"{why}: {record.argv[0]}: {exc.strerror}")
        return 1
    agent = proc.ProcRef.of(child.pid)
    trouble.agent = agent
    record = state_file.update(rd, _started(agent, version, start))
    if record.state != "running":
        proc.kill_tree(agent)  # a stop arrived while the agent was starting
    if stdin_pipe and child.stdin is not None:
        # from a thread of its own, while capture reads: an agent that prints more than a pipe holds before
        # it reads a long prompt would otherwise wait on us as we wait on it
        threading.Thread(target=_feed, args=(child.stdin, (record.prompt or "").encode()), daemon=True).start()
    snapper.start()
    outcome = capture(child, rd.events, clock, trouble)
    if child.stdout is not None:
        child.stdout.close()  # nobody reads it any more: a stopped capture must not block the agent
    rc = child.wait()
    snapper.stop_event.set()
    snapper.join()  # bounded by its git's own timeout; its git must not pass for a leftover below
    _end_leftovers(child.pid, rd.clone)
    if trouble.reason is None:
        snapper.take()
    how, reason = _ending(rc, outcome, rd.agent_stderr)
    if trouble.reason is not None:
        how, reason = "failed", trouble.reason
    claim, checked = AgentClaim(ending=how, reason=reason), None
    overdue = past_stuck(record, clock.seconds(time.time() - clock.started_at) / 60.0, outcome.tool_calls)
    if overdue is not None and trouble.reason is None:  # judged on the run's clock when the agent exited
        how, reason = "stalled", f"{overdue} when the agent exited on its own ({reason})"
    elif how == "succeeded" and record.verify:  # the agent's claim is checked, never taken on its word
        checked = verify(rd, record.verify, record.verify_timeout_s)
        if checked is not None:
            how, reason = verdict(reason, checked, record.verify_timeout_s)
    elif how == "succeeded":  # no check to decide: success needs a change asked for, and no give-up
        changed = _changed(rd.clone, start)
        how, reason = endings.judge(reason, outcome.final_words, changed, record.outputs, record.scope)
    delivered = None
    if how == "succeeded" and record.deliver == "branch" and not stop_asked(rd):  # the work handed back
        delivered = delivery.deliver(rd.path, rd.clone, record, reason, clock.iso(time.time()))
        reason += f"; delivery: {delivered.error}" if delivered.error else ""
    _finish(rd, clock, how, reason, rc, report(outcome), claim, checked, delivered)
    return 0


def _head(clone: Path) -> str | None:
    try:
        return git.head(clone)
    except (OSError, subprocess.SubprocessError):
        return None


def _changed(clone: Path, start: str | None) -> list[str] | None:
    """The clone's paths changed since the run began; None when that cannot be told (the exit then stands)."""
    if start is None:
        return None
    try:
        return git.changed_since(clone, start)
    except (OSError, subprocess.SubprocessError):
        return None


def _end_leftovers(agent_pid: int, clone: Path) -> None:
    """The agent is gone: so goes what it left running in its clone (a server started with `&`, a tool
    call in a session of its own), before the clone is looked at or checked. What it left running
    elsewhere is left alone (a shared daemon), and both are listed in supervisor.log."""
    stopped, spared = proc.end_descendants({agent_pid}, clone)
    for what, lines in (("stopped", stopped), ("left running (not in the clone)", spared)):
        if lines:
            listed = "; ".join(lines[:10]) + (f"; and {len(lines) - 10} more" if len(lines) > 10 else "")
            count = f"{len(lines)} process{'es' if len(lines) > 1 else ''}"
            note = f"supervisor: {what} {count} the agent started: {listed}"
            sys.stderr.write(redact(note) + "\n")


def _stderr_hint(path: Path) -> str:
    try:
        tail = path.read_bytes()[-_STDERR_TAIL:].decode(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return f": {tail[-1][:200]}" if tail else ""


def _finish(
    rd: RunDir,
    clock: RunClock,
    how: str,
    reason: str,
    exit_code: int | None = None,
    agent_report: AgentReport | None = None,
    claim: AgentClaim | None = None,
    checked: VerifyResult | None = None,
    delivered: Delivered | None = None,
) -> None:
    """Record the ending, unless someone asked for this stop (kill, stall) and so names it."""

    def change(r: RunRecord) -> bool:
        r.delivered = delivered or r.delivered
        if agent_report is not None:
            r.agent_report, r.provider = agent_report, None
        if claim is not None:
            r.agent_claim, r.verify_result = claim, checked
        req = r.stop_requested
        if req is not None and req.end_as in ENDED:
            ended = state_file.end(r, req.end_as, req.reason, exit_code=exit_code)
        else:
            ended = state_file.end(r, how, reason, exit_code=exit_code)
        return ended or agent_report is not None

    record = state_file.update(rd, change)
    try:
        case_file.write_run_case(rd, record, clock.at(time.time()))
    except OSError as exc:  # the ending is recorded; only the case file is missing
        sys.stderr.write(f"supervisor: cannot write {rd.case_yaml.name}: {exc.strerror or exc}\n")


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or (len(argv) == 3 and not argv[2].isdigit()):
        sys.stderr.write("usage: python -m orchestrator.runs.supervisor RUN_DIR [ADMISSION]\n")
        return 2
    rd = RunDir(Path(argv[1]))
    try:
        return supervise(rd.path, int(argv[2]) if len(argv) == 3 else None)
    except Exception as exc:
        if isinstance(exc, state_file.StateError):  # its message names the file and what the disk said
            why = f"{'disk full' if exc.disk_full else 'disk error'}: {exc}"
        else:
            why = f"supervisor error: {type(exc).__name__}: {exc}"
        try:
            record = state_file.read(rd)
            if record.agent_pid is not None:
                proc.kill_tree(record.agent_pid)  # nobody would capture its output or record its end
            _end_leftovers(record.agent_pid.pid if record.agent_pid else -1, rd.clone)
            _finish(rd, RunClock.of(record), "failed", why)
        except Exception as again:  # not even the ending could be recorded: the next pass finds it lost
            sys.stderr.write(f"supervisor: cannot record the ending ({why}): {again}\n")
        raise


if __name__ == "__main__":
    sys.exit(main(sys.argv))
