"""The executor seam: where a run's supervisor executes, and how the orchestrator reaches it.

A run is a folder of append-only files (events.jsonl, workspace.jsonl) and a state record; whatever
executes it only has to keep that folder filled. An executor starts the supervised run from its folder
and record, says whether it is alive, stops it (gently, then hard) and says where it runs. `local`
(executors/local.py) is the detached supervisor on this machine; `ray` (executors/ray_exec.py) runs the
same supervisor on a Ray node and follows its output back into the local folder (executors/mux.py: one
process follows all of a home's Ray runs).
"""

from __future__ import annotations

import socket
from typing import Protocol

from orchestrator.record.layout import RunDir
from orchestrator.record.model import Placement, RunRecord


class Executor(Protocol):
    kind: str
    clones_here: bool  # the clone is made on this machine (by launch.py) before start()

    def start(self, rd: RunDir, token: int) -> None:
        """Start the supervised run of start `token` (its record is `launching`); returns at once."""

    def alive(self, record: RunRecord) -> bool:
        """The process that supervises the run (or follows it from the engine) is alive."""

    def agent_alive(self, record: RunRecord) -> bool:
        """The agent (or the engine's work for it) is alive."""

    def stop(self, record: RunRecord, *, then_supervisor: bool = True) -> str | None:
        """Stop the run's work, gently then hard; None once confirmed stopped, else what survived."""


def this_host() -> str:
    return socket.gethostname()


def placement(record: RunRecord) -> Placement:
    """Where the record says the run executes (a record from before executors: here)."""
    return record.executor or Placement(kind="local")


def executes_on(record: RunRecord) -> str | None:
    """`kind:where` for status (`local:host`, `ray:10.0.0.2`); just the kind while not yet placed."""
    if record.executor is None:
        return None
    p = record.executor
    return f"{p.kind}:{p.where}" if p.where else p.kind


def for_record(record: RunRecord) -> Executor:
    if placement(record).kind == "ray":
        from orchestrator.runs.executors.ray_exec import RayExecutor

        return RayExecutor()
    from orchestrator.runs.executors.local import LocalExecutor

    return LocalExecutor()
