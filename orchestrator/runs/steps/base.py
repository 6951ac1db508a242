"""The step seam: one concern of a watcher pass (`runs/tick.py` runs them in order).

A step says in which of a run's phases it runs and applies itself to the pass (`Pass`): it reads
the record and the fed detector, changes its own part of the record, and returns what happened as
events. It also names the kinds of notice its facts make due (`notices`), with their texts. Anything with an effect outside the record (a stop, a requeue, a notice) it only asks for:
the tick carries it out after the record is written.
"""

from __future__ import annotations

import os
from typing import Protocol

import msgspec

from orchestrator.notify.kinds import NoticeKind
from orchestrator.record.model import RunRecord
from orchestrator.runs.events import Event
from orchestrator.runs.steering import track
from orchestrator.runs.steps.context import Pass

QUEUED, LIVE, CLOSING, WITHDRAWING, DONE = "queued", "live", "closing", "withdrawing", "done"


def phase(record: RunRecord) -> str:
    """Where the run stands for a pass: waiting in the queue, alive, just ended with its log not yet
    accounted, ended with messages still queued for it, or done with."""
    if record.queued:
        return QUEUED
    if record.active:
        return LIVE
    if record.spend is None and record.format:
        return CLOSING  # its whole log is accounted once, its last receipts and answers taken
    if track.outstanding(record):
        return WITHDRAWING  # ended with messages still queued: withdrawn and reported
    return DONE


# set (the test suite sets it), every step's writes are checked against the parts it owns
CHECK_PARTS_ENV = "ORCHESTRATOR_CHECK_STEP_PARTS"


class PartError(RuntimeError):
    """A step wrote a part of the record it does not own."""


class Step(Protocol):
    name: str
    phases: frozenset[str]
    owns: frozenset[str]  # the parts of the record (its top-level fields) this step may write
    notices: tuple[NoticeKind, ...]  # the kinds of notice whose facts this step keeps (notify/kinds.py)

    def apply(self, p: Pass) -> list[Event]:
        """Apply this concern to the pass; what happened, as events."""


def checking() -> bool:
    """Whether this process checks each step's writes (ORCHESTRATOR_CHECK_STEP_PARTS=1)."""
    return os.environ.get(CHECK_PARTS_ENV) == "1"


def checked(step: Step, p: Pass) -> list[Event]:
    """Apply one step to the pass, and refuse it (PartError) when it wrote a part of the record outside
    `owns`: the rule that each step keeps to its own part (the tick checks with `checking()`)."""
    before = msgspec.to_builtins(p.record)
    events = step.apply(p)
    after = msgspec.to_builtins(p.record)
    wrote = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
    if wrote - step.owns:
        raise PartError(f"step {step.name} wrote {sorted(wrote - step.owns)}, outside its parts {sorted(step.owns)}")
    return events
