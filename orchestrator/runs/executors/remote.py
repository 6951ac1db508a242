"""The far side of the `ray` executor: a Ray actor on the node that runs one run's supervisor.

It makes a run folder of its own on the node (a temp folder), clones the ticket's repo there and starts
the very supervisor a local run has (orchestrator/runs/supervisor.py), so the envelopes and snapshots
are written by the same capture code. The multiplexing follower on the orchestrator's machine
(executors/mux.py) pulls the new complete lines of events.jsonl and workspace.jsonl and the remote
state, and asks for the stop. Imported only where ray is installed (the `ray` extra).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.infra import git, proc
from orchestrator.infra.lines import open_at
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord, StopRequest
from orchestrator.runs.executors.local import LocalExecutor

MAX_PULL_BYTES = 4 * 1024 * 1024  # at most this much of each file per pull: a burst streams over a few


def _complete(path: Path, offset: int) -> bytes:
    """The complete lines of `path` from `offset` (a line still being written waits for the next pull)."""
    with open_at(path, offset) as fh:
        data = fh.read(MAX_PULL_BYTES)
    end = data.rfind(b"\n")
    return data[: end + 1] if end >= 0 else b""


class RunActor:
    """One run on one node; its methods are called by the multiplexer that placed it only."""

    def __init__(self) -> None:
        self.rd: RunDir | None = None

    def start(self, record_json: bytes, ticket_text: str) -> dict[str, Any]:
        record = msgspec.json.decode(record_json, type=RunRecord)
        rd = self.rd = RunDir(Path(tempfile.mkdtemp(prefix=f"orchestrator-{record.run_id}-")))
        rd.ticket.write_text(ticket_text, encoding="utf-8")
        git.clone(str(record.repo), rd.clone, base=record.base, branch=record.branch or f"ticket/{record.ticket_id}")
        tracked = git.tracked_files(rd.clone)
        rd.tracked.write_text("".join(p + "\n" for p in tracked), encoding="utf-8")
        rd.events.touch()
        rd.workspace.touch()
        record.supervisor = record.agent_pid = record.launcher = None
        state_file.write(rd, record)
        state_file.reserve(rd)
        supervisor = [sys.executable, "-m", "orchestrator.runs.supervisor", str(rd.path), str(record.admission)]
        proc.spawn_detached(supervisor, cwd=rd.path, log=rd.supervisor_log)
        return {"where": _node_name(), "dir": str(rd.path), "clone": os.path.realpath(rd.clone), "tracked": tracked}

    def pull(self, events_at: int, workspace_at: int) -> tuple[bytes, bytes, bytes]:
        """New complete lines of events.jsonl and workspace.jsonl, and state.json as it stands."""
        assert self.rd is not None
        events = _complete(self.rd.events, events_at)
        workspace = _complete(self.rd.workspace, workspace_at)
        return events, workspace, self.rd.state_json.read_bytes()

    def stop(self, end_as: str, reason: str) -> str | None:
        """Ask the supervisor to stop (it records the ending), stop the agent's tree, then the supervisor;
        None once nothing of the run is left alive on this node."""
        assert self.rd is not None

        def request(r: RunRecord) -> bool:
            if not r.active or r.stop_requested is not None:
                return False
            r.stop_requested = StopRequest(end_as=end_as, reason=reason, at=state_file.utcnow())
            return True

        record = state_file.update(self.rd, request)
        problem = LocalExecutor().stop(record)
        sup = record.supervisor
        if problem is None and sup is not None and sup.alive():
            problem = f"the supervisor survived (pid {sup.pid})"
        return problem

    def cleanup(self) -> None:
        if self.rd is not None:
            shutil.rmtree(self.rd.path, ignore_errors=True)


def _node_name() -> str:
    try:
        import ray

        util: Any = ray.util
        return str(util.get_node_ip_address())
    except Exception:
        return socket.gethostname()
