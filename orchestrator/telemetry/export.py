"""Exactly-once-or-retried export of an ended run's trace, as notify/delivery.py does for notices.

`record.otlp` holds the state. A sender claims the export under the run lock
(a lease naming its pid and create time, valid for the timeout plus a grace),
sends with the lock released, in a worker thread, then records the outcome
under the lock again: `exported_at` once the endpoint accepted it (nobody
sends it again), or the error and the next attempt time (exponential backoff).
A lease of a dead sender is taken over; one held past its deadline is a
failed attempt. The caller (the watcher's tick, `status`) waits at most
`WAIT_S`; the attempt ends by its own timeout.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from orchestrator.config import OtlpConfig, UserConfig
from orchestrator.infra import proc
from orchestrator.notify.pages import redact
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import Claim, RunRecord, TraceExport
from orchestrator.telemetry import otlp
from orchestrator.telemetry.spans import trace_of

LEASE_GRACE_S = 15.0
WAIT_S = 0.5
MAX_IN_FLIGHT = 4  # per process: a backlog of ended runs goes out a few at a time, over later passes
_flight = threading.BoundedSemaphore(MAX_IN_FLIGHT)
_noted: set[str] = set()  # one-line notes this process already gave


def note(text: str) -> None:
    if text not in _noted:
        _noted.add(text)
        sys.stderr.write(f"otlp: {text}\n")


def due(record: RunRecord, now: float) -> bool:
    """The run ended and was accounted, and its trace is neither sent nor waiting for its retry."""
    if not record.ended or (record.spend is None and record.format):
        return False
    x = record.otlp
    if x is None:
        return True
    if x.exported_at is not None or (x.next_attempt_at or 0.0) > now:
        return False
    return x.claim is None or not x.claim.holder.alive() or x.claim.expires <= now


def _claim(r: RunRecord, me: proc.ProcRef, now: float, cfg: OtlpConfig, got: list[RunRecord]) -> bool:
    if not due(r, now):
        return False
    x = r.otlp or TraceExport()
    if x.claim is not None and x.claim.holder.alive():  # alive past its deadline: a stuck sender
        x.claim, x.last_error = None, f"the attempt did not finish within its {cfg.timeout_s:g} s timeout"
        x.next_attempt_at = now + cfg.backoff(max(1, x.attempts))
        r.otlp = x
        return True
    x.claim = Claim(me.pid, me.create_time, now + cfg.timeout_s + LEASE_GRACE_S)
    x.attempts += 1
    r.otlp = x
    got.append(r)
    return True


def _finish(r: RunRecord, me: proc.ProcRef, cfg: OtlpConfig, error: str | None, outcome: list[str]) -> bool:
    x = r.otlp or TraceExport()
    if x.claim is None or x.claim.holder != me:
        outcome.append("trace: another sender took the export over")
        return False
    x.claim = None
    if error is None:
        x.exported_at, x.last_error, x.next_attempt_at = state_file.utcnow(), None, None
        outcome.append("trace exported")
    else:
        x.last_error = error
        x.next_attempt_at = time.time() + cfg.backoff(max(1, x.attempts))
        outcome.append(f"trace export failed: {error}")
    r.otlp = x
    return True


def _attempt(rd: RunDir, record: RunRecord, cfg: OtlpConfig, me: proc.ProcRef, outcome: list[str]) -> None:
    try:
        try:
            error = otlp.send(trace_of(record, redact), cfg)
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        error = None if error is None else redact(" ".join(error.split()))[:300]
        state_file.update(rd, lambda r: _finish(r, me, cfg, error, outcome))
    except Exception as exc:  # the lease runs out and a later pass retries
        outcome.append(f"trace export failed: the outcome could not be recorded: {type(exc).__name__}")
    finally:
        _flight.release()


def export_due(run: RunDir, record: RunRecord, cfg: UserConfig, wait_s: float = WAIT_S) -> list[str]:
    """Start the export of this run's trace when it is due; what happened within `wait_s` (for the pass's events)."""
    o = cfg.otlp
    now = time.time()
    if o is None or not due(record, now):
        return []
    why = otlp.installed()
    if why is not None:
        note(
            f"config.yaml sets otlp: but the OpenTelemetry exporter is not installed ({otlp.EXTRA_HINT}); traces are not sent"
        )
        return []
    if not _flight.acquire(blocking=False):
        return []  # enough in flight: a later pass sends this one
    try:
        me = proc.ProcRef.of(os.getpid())
        got: list[RunRecord] = []
        state_file.update(run, lambda r: _claim(r, me, now, o, got))
    except Exception as exc:  # the run's row still shows; a later pass tries again
        _flight.release()
        return [f"trace export not started: {type(exc).__name__}: {redact(str(exc))}"]
    if not got:
        _flight.release()
        return []
    outcome: list[str] = []
    # not a daemon: a short-lived `status` exits once the attempt ended (by its timeout), never mid-record
    worker = threading.Thread(target=_attempt, args=(run, got[0], o, me, outcome), name="otlp export", daemon=False)
    worker.start()
    worker.join(wait_s)
    return list(outcome) or ["trace export in flight"]
