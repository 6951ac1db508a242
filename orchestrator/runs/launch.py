"""`launch`: a ticket in, a fresh clone and a detached supervised agent out."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.corpus.case import load_case
from orchestrator.infra import git, proc
from orchestrator.infra.errors import UserError
from orchestrator.infra.paths import runs_dir
from orchestrator.record import case_file, state_file
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


def _new_run_dir(ticket_id: str) -> Path:
    root = runs_dir()
    root.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        run_id = f"{ticket_id}-{stamp}" + (f"-{n}" if n > 1 else "")
        try:
            (root / run_id).mkdir()
            return root / run_id
        except FileExistsError:
            continue
    raise UserError(f"cannot allocate a run folder under {root}")


def launch(ref: str, cfg: UserConfig, buckets: BucketsFile, *, wait: bool = True) -> Launched:
    ticket = tickets.load(tickets.resolve(ref, cfg), cfg)
    settings = buckets.with_overrides(ticket.overrides, str(ticket.path), ticket.lines, ("overrides",))
    if ticket.speed != 1.0 and ticket.agent != "demo":
        raise UserError(f"{ticket.path}: speed is only for the demo agent (real agents run on the wall clock)")
    argv, fmt, prompt_mode, version_cmd = _argv(ticket, cfg)
    if _find_binary(argv[0]) is None:
        raise UserError(f"agent {ticket.agent!r}: {argv[0]} not found (is it installed and on PATH?)")
    run_dir = _new_run_dir(ticket.id)
    now = state_file.utcnow()
    state: dict[str, Any] = {
        "run_id": run_dir.name,
        "ticket_id": ticket.id,
        "ticket_path": str(ticket.path.resolve()),
        "bucket": ticket.bucket,
        "agent": ticket.agent,
        "format": fmt,
        "argv": argv,
        "prompt_mode": prompt_mode,
        "prompt": ticket.body if prompt_mode == "stdin" else None,
        "model": cfg.profiles[ticket.agent].model,
        "version_command": version_cmd,
        "agent_version": None,
        "repo": ticket.repo,
        "base": ticket.base,
        "branch": f"ticket/{ticket.id}",
        "outputs": ticket.outputs,
        "overrides": ticket.overrides,
        "time_scale": ticket.speed,
        "snapshot_every_s": settings.snapshot_every_s,
        # the run is judged by the settings it launched with, whatever buckets.yaml becomes later
        "settings": merge(buckets.raw, ticket.overrides) if ticket.overrides else buckets.raw,
        "state": "launching",
        "created_at": now,
        "started_at": now,
        "spiral": {},
        "launcher": proc.ProcRef.of(os.getpid()).to_dict(),
    }
    state_file.write(run_dir, state)
    (run_dir / "ticket.md").write_text(ticket.text, encoding="utf-8")
    try:
        git.clone(ticket.repo, run_dir / "clone", base=ticket.base, branch=f"ticket/{ticket.id}")
        tracked = git.tracked_files(run_dir / "clone")
    except (UserError, proc.CommandError) as exc:
        why = str(exc)
        state_file.update(run_dir, lambda s: state_file.end(s, "failed", why))
        raise UserError(f"run {run_dir.name} failed: {why}") from None
    (run_dir / "tracked.txt").write_text("".join(p + "\n" for p in tracked), encoding="utf-8")
    for name in ("events.jsonl", "workspace.jsonl"):
        (run_dir / name).touch()

    def start(s: dict[str, Any]) -> bool:
        if s.get("state") != "launching" or s.get("stop_requested"):
            return False  # stopped (killed, or given up on) while cloning: start nothing
        s["started_at"] = s["spawned_at"] = state_file.utcnow()  # the clock starts when the agent can start
        return True

    state = state_file.update(run_dir, start)
    if "spawned_at" not in state:
        raise UserError(
            f"run {run_dir.name} {state.get('state')} during launch: {state.get('reason')}; no agent was started"
        )
    case_file.write_run_case(run_dir, state)
    with (run_dir / "supervisor.log").open("ab") as log:
        subprocess.Popen(
            [sys.executable, "-m", "orchestrator.runs.supervisor", str(run_dir)],
            cwd=run_dir,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            env=proc.clean_env(),
        )
    if wait:
        deadline = time.monotonic() + SUPERVISOR_START_TIMEOUT_S
        while time.monotonic() < deadline:
            state = state_file.read(run_dir)
            if state.get("state") != "launching":
                break
            time.sleep(0.05)
    return Launched(run_dir.name, run_dir, str(state.get("state")), state.get("reason"), "agent_pid" in state)
