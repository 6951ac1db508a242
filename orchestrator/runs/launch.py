"""`launch`: a ticket in, a fresh clone and a detached supervised agent out."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import msgspec

from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.infra import git, proc
from orchestrator.infra.errors import UserError
from orchestrator.infra.lock import LockBusy
from orchestrator.infra.paths import runs_dir
from orchestrator.notify.channels import check_targets, from_config
from orchestrator.record import case_file, state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import QUEUED, Ceilings, EscalationLadder, Placement, RunRecord
from orchestrator.runs import clone_steps, fleet, tickets
from orchestrator.runs.agent_command import AgentCommand, agent_command
from orchestrator.runs.executors import base as executors
from orchestrator.runs.pipeline import NOTICES
from orchestrator.runs.watch import ensure_watcher
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
    problem: str | None = None  # why this launch started no agent (a failed clone, a stop), for the user
    setting_up: bool = False  # the ticket's `setup:` runs before the agent starts


def _find_binary(argv0: str) -> str | None:
    if "/" in argv0:
        return argv0 if os.access(argv0, os.X_OK) and Path(argv0).is_file() else None
    return shutil.which(argv0)


def check_agent(name: str, cmd: AgentCommand) -> str | None:
    """The agent's version line; a UserError that says what is missing when it cannot run."""
    argv0 = cmd.argv[0]
    if _find_binary(argv0) is None:
        hint = f": {cmd.install_hint}" if cmd.install_hint else " (is it installed and on PATH?)"
        raise UserError(f"agent {name!r}: {argv0} not on PATH{hint}")
    if not cmd.version_command:
        return None
    try:
        rc, out, err = proc.run(cmd.version_command, check=False, timeout=30, env=cmd.env)
    except proc.CommandError as exc:
        raise UserError(f"agent {name!r}: {exc}") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"agent {name!r}: {' '.join(cmd.version_command)} did not answer: {exc}") from None
    text = (out or err).decode(errors="replace").strip().splitlines()
    if rc != 0:
        raise UserError(f"agent {name!r}: {' '.join(cmd.version_command)} exited {rc}: {(text or [''])[-1][:200]}")
    return text[0][:200] if text else None


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
        except OSError as exc:
            raise UserError(f"{root}: cannot create a run folder: {exc.strerror}") from None
    raise UserError(f"cannot allocate a run folder under {root}")


def _record(run_id: str, ticket: tickets.Ticket, cmd: AgentCommand, cfg: UserConfig, buckets: BucketsFile) -> RunRecord:
    settings = buckets.with_overrides(ticket.overrides, str(ticket.path), ticket.lines, ("overrides",))
    steps = clone_steps.for_ticket(ticket, cfg)
    now = state_file.utcnow()
    return RunRecord(
        run_id=run_id,
        ticket_id=ticket.id,
        ticket_path=str(ticket.path.resolve()),
        bucket=ticket.bucket,
        agent=ticket.agent,
        format=cmd.format,
        argv=cmd.argv,
        prompt_mode=cmd.prompt_mode,
        prompt=ticket.body if cmd.prompt_mode == "stdin" else None,
        env=cmd.env,
        agent_homes=agent_homes(cmd),
        model=cfg.profiles[ticket.agent].model,
        version_command=cmd.version_command,
        repo=ticket.repo,
        base=ticket.base,
        branch=f"ticket/{ticket.id}",
        outputs=list(ticket.outputs),
        scope=list(ticket.scope),
        overrides=ticket.overrides,
        time_scale=ticket.speed,
        snapshot_every_s=settings.snapshot_every_s,
        guidance_via=cmd.guidance_via,
        ceilings=Ceilings(
            max_usd=ticket.max_usd if ticket.max_usd is not None else cfg.profiles[ticket.agent].max_usd,
            max_tokens=ticket.max_tokens if ticket.max_tokens is not None else cfg.profiles[ticket.agent].max_tokens,
        ),
        ladder=EscalationLadder(
            rungs=list(ticket.escalation if ticket.escalation is not None else cfg.profiles[ticket.agent].escalation)
        ),
        verify=list(ticket.verify),  # the ticket's check, frozen like the settings
        verify_timeout_s=ticket.verify_timeout_s,
        copy=[list(item) for item in steps.copy or ()],
        setup=list(steps.setup or ()),
        setup_timeout_s=steps.setup_timeout_s or tickets.VERIFY_TIMEOUT_S,
        deliver=steps.deliver,
        pr_command=list(steps.pr_command or ()),
        # the run is judged by the settings it launched with, whatever buckets.yaml becomes later
        settings=merge(buckets.raw, ticket.overrides) if ticket.overrides else buckets.raw,
        state=QUEUED,
        created_at=now,
        queued_at=now,
        launcher=proc.ProcRef.of(os.getpid()),
        executor=_placement(cfg),
    )


def _placement(cfg: UserConfig) -> Placement | None:
    """Where the run will execute, as config.yaml says at launch (None: here, placed when it starts)."""
    e = cfg.executor
    return None if e is None else Placement(kind=e.kind, address=e.address, resources=dict(e.resources))


def agent_homes(cmd: AgentCommand) -> dict[str, str]:
    """Where the agent keeps its own records (session transcripts, rollouts), as it will see them."""
    homes = {}
    for var, default in (("CLAUDE_CONFIG_DIR", "~/.claude"), ("CODEX_HOME", "~/.codex")):
        homes[var] = str(Path(cmd.env.get(var) or os.environ.get(var) or default).expanduser())
    return homes


def launch(ref: str, cfg: UserConfig, buckets: BucketsFile, *, wait: bool = True, watcher: bool = True) -> Launched:
    """Launch one ticket; with `watcher`, make sure a background watcher will evaluate and page it."""
    (one,) = launch_many([ref], cfg, buckets, wait=wait, watcher=watcher)
    if one.problem is not None:
        raise UserError(one.problem)
    return one


def launch_many(
    refs: list[str], cfg: UserConfig, buckets: BucketsFile, *, wait: bool = True, watcher: bool = True
) -> list[Launched]:
    """Queue every ticket (each checked before any is queued), start what fits under the cap now
    (runs/fleet.py), and make sure a watcher runs, which starts the rest as slots free."""
    if cfg.executor is not None and cfg.executor.kind == "ray" and not _importable("ray"):
        raise UserError(f"{cfg.path}: executor kind ray needs Ray here: pip install -e '.[ray]' (or 'ray[default]')")
    checked = [_checked(ref, cfg) for ref in refs]
    # targets that could never be sent to are refused before anything runs
    check_targets(from_config(cfg, NOTICES), cfg)
    queued: list[RunDir] = []
    try:
        for ticket, version in checked:
            queued.append(_queue(ticket, version, cfg, buckets))
        try:
            started = set(fleet.admit(cfg, start_run, frozenset(rd.run_id for rd in queued)))
        except LockBusy:  # another process holds the queue for long: the watcher starts these
            sys.stderr.write("note: the queue is busy (another launch or pass is starting runs); these wait in it\n")
            started = set()
    finally:
        if watcher and queued:  # even when a later ticket could not be queued, the queued ones get a watcher
            try:
                ensure_watcher(cfg)
            except OSError as exc:  # the runs are launched or queued; say why nobody may be watching them
                sys.stderr.write(f"warning: could not start a background watcher: {exc}; run `watch` yourself\n")
    out = []
    deadline = time.monotonic() + SUPERVISOR_START_TIMEOUT_S  # one wait for the batch, not one per run
    for rd in queued:
        record = state_file.read(rd)
        if wait and rd.path in started and record.spawned_at is not None:
            # (a run with `setup:` is launched once its supervisor took it: the set-up may take minutes)
            while record.state == "launching" and not _setting_up(record) and time.monotonic() < deadline:
                time.sleep(0.05)
                record = state_file.read(rd)
        problem = None
        if rd.path in started and record.spawned_at is None:
            problem = f"run {rd.run_id} {record.state} during launch: {record.reason}; no agent was started"
            if record.state == "failed":
                problem = f"run {rd.run_id} failed: {record.reason}"
        elif record.ended and record.spawned_at is None:
            problem = f"run {rd.run_id} {record.state} before it started: {record.reason}"
        setting_up = record.state == "launching" and _setting_up(record)
        started_now = _agent_started(record)
        out.append(Launched(rd.run_id, rd.path, record.state, record.reason, started_now, problem, setting_up))
    return out


def _setting_up(record: RunRecord) -> bool:
    return bool(record.setup or record.copy) and record.supervisor is not None


def _agent_started(record: RunRecord) -> bool:
    if executors.for_record(record).clones_here:
        return record.agent_pid is not None
    # on an engine the agent's pid is the node's: it started once the node said running, or it exited
    return record.state == "running" or record.exit_code is not None


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _checked(ref: str, cfg: UserConfig) -> tuple[tickets.Ticket, str | None]:
    ticket = tickets.load(tickets.resolve(ref, cfg), cfg)
    if ticket.speed != 1.0 and ticket.agent != "demo":
        raise UserError(f"{ticket.path}: speed is only for the demo agent (real agents run on the wall clock)")
    cmd = agent_command(ticket, cfg)
    profile = cfg.profiles[ticket.agent]
    ceilings = [
        name
        for name, own, profiles in (
            ("max_usd", ticket.max_usd, profile.max_usd),
            ("max_tokens", ticket.max_tokens, profile.max_tokens),
        )
        if own is not None or profiles is not None
    ]
    if ceilings and not (cmd.format.startswith("claude") or cmd.format == "codex-json"):
        raise UserError(
            f"{ticket.path}: {' and '.join(ceilings)} cannot be held: agent {ticket.agent!r} logs in the "
            f"{cmd.format!r} format, which reports no token usage (remove the ceiling, or use an agent whose log does)"
        )
    if (missing := clone_steps.missing_copy_source(clone_steps.for_ticket(ticket, cfg))) is not None:
        raise UserError(f"{ticket.path}: copy: {missing}: no such file or folder to copy into the clone")
    return ticket, check_agent(ticket.agent, cmd)


def _queue(ticket: tickets.Ticket, version: str | None, cfg: UserConfig, buckets: BucketsFile) -> RunDir:
    """A run folder with its record in state `queued`, its ticket and its (empty) guidance inbox."""
    rd = _new_run_dir(ticket.id)
    try:
        cmd = agent_command(ticket, cfg, rd.guidance)  # now that the run has a folder: its guidance inbox
        record = _record(rd.run_id, ticket, cmd, cfg, buckets)
    except UserError:  # refused (its overrides, say): no empty run folder is left behind
        shutil.rmtree(rd.path, ignore_errors=True)
        raise
    record.agent_version = version
    try:
        rd.ticket.write_text(ticket.text, encoding="utf-8")
        (rd.guidance / "inbox").mkdir(parents=True, exist_ok=True)
        (rd.guidance / "claimed").mkdir(exist_ok=True)
        state_file.write(rd, record)
    except (OSError, UserError) as exc:  # a run folder without a state is shown nowhere: none is left behind
        shutil.rmtree(rd.path, ignore_errors=True)
        why = exc if isinstance(exc, UserError) else _disk_reason(exc)
        raise UserError(f"cannot launch {ticket.id}: {why}") from None
    state_file.reserve(rd)
    return rd


def start_run(path: Path) -> None:
    """Clone and spawn the supervisor of a run the queue just moved to `launching` (fleet.admit).

    Each start clones into a folder of its own (`.clone-<admission>`), renamed to `clone/` under the
    run's lock only while the record still names this start: a start whose admitter died (its `git
    clone` may still be writing) and a newer start of the same run never share a folder."""
    rd = RunDir.of(path)
    record = state_file.read(rd)
    if record.state != "launching":
        return
    token = record.admission
    executor = executors.for_record(record)
    if not executor.clones_here:  # the engine clones on the node that runs it (executors/remote.py)
        executor.start(rd, token)
        return
    try:
        record = _prepare(rd, record, token)
    except Exception as exc:
        why = str(exc) if isinstance(exc, (UserError, proc.CommandError)) else _disk_reason(exc)
        shutil.rmtree(_attempt(rd, token), ignore_errors=True)
        state_file.update(rd, lambda r: r.admission == token and state_file.end(r, "failed", why))
        return
    if record.spawned_at is None or record.admission != token:
        return  # stopped while cloning, or no longer this start's: start nothing (the record says why)
    executor.start(rd, token)  # local: the detached supervisor (executors/local.py)


def _attempt(rd: RunDir, token: int) -> Path:
    return rd.path / f".clone-{token}"


def _prepare(rd: RunDir, record: RunRecord, token: int) -> RunRecord:
    """The clone, from the record's repo and base; the record as it stands when the agent may start."""
    attempt = _attempt(rd, token)
    shutil.rmtree(attempt, ignore_errors=True)

    def stopped() -> bool:  # killed (or taken over) while cloning: the clone ends at once
        try:
            r = state_file.read_shared(rd)
        except UserError:
            return False
        return r.state != "launching" or r.stop_requested is not None or r.admission != token

    branch = record.branch or f"ticket/{record.ticket_id}"
    git.clone(str(record.repo), attempt, base=record.base, branch=branch, stop=stopped)
    tracked = git.tracked_files(attempt)

    def start(r: RunRecord) -> bool:
        if r.state != "launching" or r.stop_requested is not None or r.admission != token:
            return False  # stopped (killed, given up on) or taken over while cloning: start nothing
        shutil.rmtree(rd.clone, ignore_errors=True)  # what an interrupted start left
        os.rename(attempt, rd.clone)
        r.executor = msgspec.structs.replace(executors.placement(r), where=executors.this_host())
        r.started_at = r.spawned_at = state_file.utcnow()  # the clock starts when the agent can start
        r.reason = None  # ("queued again" from an interrupted start: `requeued` counts those)
        return True

    rd.tracked.write_text("".join(p + "\n" for p in tracked), encoding="utf-8")
    rd.events.touch()
    rd.workspace.touch()
    record = state_file.update(rd, start)
    if record.spawned_at is None or record.admission != token:
        shutil.rmtree(attempt, ignore_errors=True)
        return record
    case_file.write_run_case(rd, record)
    return record


def _disk_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        kind = "disk full" if exc.errno in state_file.FULL else "cannot write the run folder"
        where = f"{Path(exc.filename).name}: " if exc.filename else ""
        return f"{kind}: {where}{exc.strerror or exc}"
    return f"launch error: {type(exc).__name__}: {exc}"
