"""`kill`: a person stops a run; the whole process tree goes, the ending is recorded."""

from __future__ import annotations

import time
from pathlib import Path

from orchestrator.infra import proc
from orchestrator.infra.errors import UserError
from orchestrator.record import case_file, state_file
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord, StopRequest
from orchestrator.runs.executors import base as executors
from spiral.timestamps import parse_ts


def kill_run(run: RunDir | Path, reason: str = "stopped by a person") -> RunRecord:
    rd = RunDir.of(run)

    cancelled: list[bool] = []

    def request(r: RunRecord) -> bool:
        if r.queued:  # not started: it leaves the queue, nothing to stop
            cancelled.append(True)
            return state_file.end(r, "killed", f"{reason} while queued; no agent was started")
        if not r.active:
            return False
        r.stop_requested = StopRequest(end_as="killed", reason=reason, at=state_file.utcnow())
        return True

    try:
        record = state_file.update(rd, request)
    except state_file.StateError as exc:
        if not exc.disk_full:
            raise
        return _kill_on_a_full_disk(rd, reason)
    if cancelled:
        return record
    if not record.active:
        raise UserError(f"run {rd.run_id} already ended: {record.state} ({record.reason})")
    executor = executors.for_record(record)
    if record.state == "running" and not executor.alive(record):  # died unseen: no watcher recorded it `lost`
        reason += "; its supervisor had already vanished"
    # the agent's tree, the verify: check if it is what runs now, then the supervisor (or the remote work)
    problem = executor.stop(record)
    if problem is not None:
        raise UserError(f"run {rd.run_id}: {problem}")
    final = state_file.update(rd, lambda r: state_file.end(r, "killed", reason))
    if final.state == "killed":
        ended = parse_ts(final.ended_at) or time.time()
        case_file.write_run_case(rd, final, RunClock.of(final).at(ended))
    return final


def gone_unseen(run: RunDir | Path) -> bool:
    """A running run whose supervisor and agent have both died with no watcher there to see it: nothing
    is left to stop, and a watcher pass would record it `lost` (what `kill` has it do first)."""
    try:
        record = state_file.read(RunDir.of(run))
    except UserError:
        return False
    executor = executors.for_record(record)
    return record.state == "running" and not executor.alive(record) and not executor.agent_alive(record)


def _kill_on_a_full_disk(rd: RunDir, reason: str) -> RunRecord:
    """No stop request can be written: stop the supervisor first (so it records no ending of its own),
    then the agent, and record `killed` in the space the run set aside for its ending."""
    record = state_file.read(rd)
    if not record.active:
        raise UserError(f"run {rd.run_id} already ended: {record.state} ({record.reason})")
    if not executors.for_record(record).clones_here:  # its supervisor is shared (the Ray multiplexer)
        raise UserError(f"run {rd.run_id}: no stop request can be written (the disk is full) to stop it remotely")
    for ref in (record.supervisor, record.agent_pid):
        if ref is not None and not proc.kill_tree(ref):
            raise UserError(f"run {rd.run_id}: some of its processes survived SIGKILL (pid {ref.pid})")
    return state_file.update(rd, lambda r: state_file.end(r, "killed", reason))
