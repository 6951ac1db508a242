"""Following one Ray run from this machine: the record changes the multiplexer (executors/mux.py) makes.

Each Ray run is followed by the one multiplexer of its home and cluster: it registers as the run's
supervisor with the same `_register` rule as a local supervisor, places a RunActor on a node with the
configured resources, passes the profile's environment (API keys) through Ray's runtime_env (never
through the ticket or the log), then appends the new lines of the remote events.jsonl and
workspace.jsonl here as they were written there, until the remote supervisor records the ending, which
is recorded here through state_file.update. These are the pieces that touch one run's folder.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.record import case_file, state_file
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import RunDir
from orchestrator.record.model import ENDED, RunRecord

PULL_EVERY_S = 0.2
START_TIMEOUT_S = 300.0  # placing the actor and cloning on the node
CALL_TIMEOUT_S = 30.0  # one pull or stop; past it (or the actor dead) the node is taken as gone


def placed(where: str, handle: str, clone: str | None = None) -> Any:
    """The run placed: the node, the engine's handle and the clone the agent works in there."""

    def change(r: RunRecord) -> bool:
        if r.executor is None:
            return False
        r.executor = msgspec.structs.replace(r.executor, where=where, handle=handle, clone=clone)
        return True

    return change


def mirror(remote: RunRecord) -> Any:
    """The remote run's progress (running, its agent's version) before its ending."""

    def change(r: RunRecord) -> bool:
        if r.state == "launching" and remote.state == "running" and r.stop_requested is None:
            r.state, r.agent_version = "running", remote.agent_version or r.agent_version
            return True
        return False

    return change


def ended(remote: RunRecord) -> Any:
    """The remote supervisor's ending, unless a stop asked for here names it (as supervisor._finish)."""

    def change(r: RunRecord) -> bool:
        r.agent_report, r.provider = remote.agent_report, None
        r.agent_claim, r.verify_result = remote.agent_claim, remote.verify_result
        req = r.stop_requested
        if req is not None and req.end_as in ENDED:
            state_file.end(r, req.end_as, req.reason, exit_code=remote.exit_code)
        else:
            state_file.end(r, remote.state, remote.reason or remote.state, exit_code=remote.exit_code)
        return True

    return change


def end_here(rd: RunDir, how: str, why: str) -> None:
    """Record an ending decided on this side (lost, failed to start, stop not confirmed), and its case."""
    state_file.update(rd, lambda r: state_file.end(r, how, why))
    final = state_file.read(rd)
    case_file.write_run_case(rd, final, RunClock.of(final).at(time.time()))


def record_ending(rd: RunDir, remote: RunRecord) -> None:
    state_file.update(rd, ended(remote))
    final = state_file.read(rd)
    case_file.write_run_case(rd, final, RunClock.of(final).at(time.time()))


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1][:300] if text else type(exc).__name__


def append(path: Path, data: bytes) -> None:
    if data:
        with path.open("ab") as fh:
            fh.write(data)
