"""One watcher pass over one run: its steps in order, under the run's lock.

The tick takes the lock, reads the record once, builds the pass (`runs/steps/context.py`), runs
each step of `STEPS` (`runs/pipeline.py`, where their order is written) that runs in the run's
phase, writes the record once, and then carries out what the steps asked for: a stop or a requeue,
then the notices their facts made due (`NOTICES`).
"""

from __future__ import annotations

import time
from pathlib import Path

from orchestrator.buckets import BucketsFile
from orchestrator.config import UserConfig
from orchestrator.notify.channels import Notifier
from orchestrator.record import case_file, state_file
from orchestrator.record.clock import RunClock
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord, StopRequest
from orchestrator.runs import fleet, liveness
from orchestrator.runs.events import Kind, of
from orchestrator.runs.executors import base as executors
from orchestrator.runs.pipeline import STEPS
from orchestrator.runs.sending import deliver
from orchestrator.runs.steps.base import QUEUED, checked, checking, phase
from orchestrator.runs.steps.context import KEPT, STOP_ORDER, Pass, first_view, settings_of
from orchestrator.runs.view import RunView
from spiral.timestamps import parse_ts


def refresh(
    run_dir: Path,
    buckets: BucketsFile,
    cfg: UserConfig,
    real_now: float | None = None,
    notifier: Notifier | None = None,
    *,
    send: bool = True,
) -> RunView:
    """Evaluate one run, enforce liveness, and send what is due (when given a notifier). `send=False`
    leaves the sending to the caller (`deliver`: a forked worker's views are sent by its parent)."""
    real_now = time.time() if real_now is None else real_now
    with state_file.holding(run_dir) as (rd, record):
        settings = settings_of(record, buckets)
        p = Pass(rd, record, settings, cfg, real_now, first_view(rd, record, settings, real_now))
        where = phase(record)
        if where == QUEUED:
            p.view.elapsed_min = 0.0  # its clock starts when its agent does
        check = checking()
        for step in STEPS:
            if where in step.phases:
                p.view.events += checked(step, p) if check else step.apply(p)
        if p.view.events:
            state_file.write(rd, record)
        if not KEPT.keep:
            KEPT.discard(rd.detector_cache)  # one pass only: what is unwritten is a small catch-up, redone
        view, decision = p.view, first_stop(p.stops)
    if decision is not None and decision.end_as == "queued":
        view.record = fleet.requeue(rd, decision.reason, record.admission)
        view.events.append(of(Kind.QUEUED_AGAIN))
    elif decision is not None:
        view.record = stop(rd, decision, view)
    return deliver(view, cfg, notifier) if send else view


def first_stop(stops: dict[str, liveness.Decision]) -> liveness.Decision | None:
    """The stop (or requeue) a pass carries out, if any: the first asker in `STOP_ORDER`."""
    return next((stops[k] for k in STOP_ORDER if k in stops), None)


def stop(rd: RunDir, decision: liveness.Decision, view: RunView) -> RunRecord:
    """Stop a run the liveness path gave up on; the signals seen become hints.

    A stop already requested (by `kill`, or an earlier pass) keeps its kind and
    reason; it is carried through even when its requester or the supervisor died.
    """

    def request(r: RunRecord) -> bool:
        if not r.active:
            return False
        if r.stop_requested is None:
            r.stop_requested = StopRequest(end_as=decision.end_as, reason=decision.reason, at=state_file.utcnow())
        r.hints = list(r.spiral.signals_seen)
        return True

    record = state_file.update(rd, request)
    if not record.active or record.stop_requested is None:
        return record
    req = record.stop_requested
    how, reason = req.end_as or decision.end_as, req.reason or decision.reason
    if how != decision.end_as and decision.end_as == "lost":
        reason += "; its supervisor vanished before recording it"
    # the agent, or the verify: check running after it; then a while for the supervisor to see it
    executors.for_record(record).stop(record, then_supervisor=False)
    # the supervisor records a requested stop itself; when it is gone, record it here
    final = state_file.update(rd, lambda r: state_file.end(r, how, reason))
    if final.state == how:
        view.events.append(of(Kind.ENDED, how))
        ended = parse_ts(final.ended_at) or time.time()
        case_file.write_run_case(rd, final, RunClock.of(final).at(ended))
    return final
