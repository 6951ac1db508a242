"""`launch`: a ticket in, a fresh clone and a detached supervised agent out."""

from __future__ import annotations

import os
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.corpus.case import load_case
from orchestrator.infra import git, proc
from orchestrator.infra.errors import UserError
from orchestrator.infra.paths import runs_dir
from orchestrator.record import case_file, state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord
from orchestrator.runs import tickets
from spiral.settings import merge

SUPERVISOR_START_TIMEOUT_S = 20.0


@dataclass
class Launched:
    run_id: str
    run_dir: Path
    state: str
    reason: str | None
    # the agent process was started; it may already have ended (a fast agent can finish, or
    # fail, before the launcher looks), which is the run's ending, not a failed launch
    agent_started: bool


def _argv(ticket: tickets.Ticket, cfg: UserConfig) -> tuple[list[str], str, str, list[str]]:
    """(argv, log format, prompt mode, version command) for the ticket's agent."""
    profile = cfg.profiles[ticket.agent]
    if ticket.agent == "demo":
        assert ticket.demo_case is not None
        fmt = load_case(ticket.demo_case).format
        argv = [
            sys.executable,
            "-m",
            "orchestrator.demo.agent",
            "--case",
            str(ticket.demo_case),
            "--speed",
            repr(ticket.speed),
        ]
        return argv, fmt, "none", []
    argv = list(profile.command)
    if profile.prompt == "argument":
        argv.append(ticket.body)
    return argv, profile.format, profile.prompt, list(profile.version_command)


def _find_binary(argv0: str) -> str | None:
    if "/" in argv0:
        return argv0 if os.access(argv0, os.X_OK) and Path(argv0).is_file() else None
    return shutil.which(argv0)


def _new_run_dir(ticket_id: str) -> RunDir:
    root = runs_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{root}: cannot create the runs folder: {exc.strerror}") from None
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        run_id = f"{ticket_id}-{stamp}" + (f"-{n}" if n > 1 else "")
        try:
            (root / run_id).mkdir()
            return RunDir(root / run_id)
        except FileExistsError:
            continue
    raise UserError(f"cannot allocate a run folder under {root}")


def _record(run_id: str, ticket: tickets.Ticket, cfg: UserConfig, buckets: BucketsFile) -> RunRecord:
    settings = buckets.with_overrides(ticket.overrides, str(ticket.path), ticket.lines, ("overrides",))
    argv, fmt, prompt_mode, version_cmd = _argv(ticket, cfg)
    now = state_file.utcnow()
    return RunRecord(
        run_id=run_id,
        ticket_id=ticket.id,
        ticket_path=str(ticket.path.resolve()),
        bucket=ticket.bucket,
        agent=ticket.agent,
        format=fmt,
        argv=argv,
        prompt_mode=prompt_mode,
        prompt=ticket.body if prompt_mode == "stdin" else None,
        model=cfg.profiles[ticket.agent].model,
        version_command=version_cmd,
        repo=ticket.repo,
        base=ticket.base,
        branch=f"ticket/{ticket.id}",
        outputs=list(ticket.outputs),
        overrides=ticket.overrides,
        time_scale=ticket.speed,
        snapshot_every_s=settings.snapshot_every_s,
        # the run is judged by the settings it launched with, whatever buckets.yaml becomes later
        settings=merge(buckets.raw, ticket.overrides) if ticket.overrides else buckets.raw,
        state="launching",
        created_at=now,
        started_at=now,
        launcher=proc.ProcRef.of(os.getpid()),
    )


def _start(r: RunRecord) -> bool:
    if r.state != "launching" or r.stop_requested is not None:
        return False  # stopped (killed, or given up on) while cloning: start nothing
    r.started_at = r.spawned_at = state_file.utcnow()  # the clock starts when the agent can start
    return True


def launch(ref: str, cfg: UserConfig, buckets: BucketsFile, *, wait: bool = True) -> Launched:
    ticket = tickets.load(tickets.resolve(ref, cfg), cfg)
    if ticket.speed != 1.0 and ticket.agent != "demo":
        raise UserError(f"{ticket.path}: speed is only for the demo agent (real agents run on the wall clock)")
    argv0 = _argv(ticket, cfg)[0][0]
    if _find_binary(argv0) is None:
        raise UserError(f"agent {ticket.agent!r}: {argv0} not found (is it installed and on PATH?)")
    rd = _new_run_dir(ticket.id)
    record = _record(rd.run_id, ticket, cfg, buckets)
    state_file.write(rd, record)
    rd.ticket.write_text(ticket.text, encoding="utf-8")
    try:
        git.clone(ticket.repo, rd.clone, base=ticket.base, branch=f"ticket/{ticket.id}")
        tracked = git.tracked_files(rd.clone)
    except (UserError, proc.CommandError) as exc:
        why = str(exc)
        state_file.update(rd, lambda r: state_file.end(r, "failed", why))
        raise UserError(f"run {rd.run_id} failed: {why}") from None
    rd.tracked.write_text("".join(p + "\n" for p in tracked), encoding="utf-8")
    rd.events.touch()
    rd.workspace.touch()
    record = state_file.update(rd, _start)
    if record.spawned_at is None:
        raise UserError(f"run {rd.run_id} {record.state} during launch: {record.reason}; no agent was started")
    case_file.write_run_case(rd, record)
    proc.spawn_detached(
        [sys.executable, "-m", "orchestrator.runs.supervisor", str(rd.path)], cwd=rd.path, log=rd.supervisor_log
    )
    if wait:
        deadline = time.monotonic() + SUPERVISOR_START_TIMEOUT_S
        while time.monotonic() < deadline:
            record = state_file.read(rd)
            if record.state != "launching":
                break
            time.sleep(0.05)
    return Launched(rd.run_id, rd.path, record.state, record.reason, record.agent_pid is not None)
