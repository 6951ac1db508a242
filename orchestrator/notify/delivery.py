"""Exactly-once-or-retried delivery of a run's notifications.

Each notice (the spiral page, an ending notice) lives in the run record under
`notices.<event>`. A sender first *claims* it under the run lock (a lease
naming its pid and create time), sends with the lock released, then records
the outcome under the lock again:

- delivered: the flag is set only after apprise (and the hook) reported
  success; nobody sends it again, across processes and restarts;
- failed: attempts, the last error and the next attempt time (exponential
  backoff) are recorded, and a later pass retries;
- the sender died between sending and recording: its lease names a dead
  process, so the next pass sends again. Delivery is therefore at-least-once
  in that one window (a duplicate page is possible); it is never silently lost.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.infra import proc
from orchestrator.notify import pages
from orchestrator.notify.channels import ENDINGS, Notifier
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import Claim, Notice, RunRecord

LEASE_S = 120.0
PROVIDER_NOTICE_ATTEMPTS = 3  # a retry or two is routine; the third in one episode is worth a notice


def due(record: RunRecord, notifier: Notifier) -> list[str]:
    """Notices of this run that should be (or still be) sent, by key (`provider-N`: episode N)."""
    out = []
    if "spiral" in notifier.events and record.spiral.tripped_in_soft_band:
        out.append("spiral")
    p = record.provider
    if "provider" in notifier.events and p is not None and (p.attempt or 0) >= PROVIDER_NOTICE_ATTEMPTS:
        out.append(f"provider-{p.episode}")
    if record.state in ENDINGS and record.state in notifier.events:
        out.append(record.state)
    return [e for e in out if not (e in record.notices and record.notices[e].delivered)]


def _event(key: str) -> str:
    """The event a notice key is for (`provider-2` -> `provider`), which routes it to targets."""
    return key.split("-", 1)[0]


def _compose(record: RunRecord, key: str) -> tuple[str, str]:
    event = _event(key)
    if event == "spiral":
        return pages.spiral_page(record)
    if event == "provider":
        return pages.provider_notice(record)
    return pages.ending_notice(record, event)


@dataclass
class _Attempt:
    notice: Notice | None = None
    why: str = "skipped"
    env: dict[str, str] = field(default_factory=dict)


def _claim(record: RunRecord, event: str, me: proc.ProcRef, now: float, attempt: _Attempt) -> bool:
    notice = record.notices.get(event) or Notice()
    if notice.delivered:
        attempt.why = "skipped: already delivered"
        return False
    if (notice.next_attempt_at or 0) > now:
        attempt.why = "skipped: waiting to retry"
        return False
    lease = notice.claim
    if lease is not None and lease.holder.alive() and lease.expires > now:
        attempt.why = "skipped: another process is sending"
        return False
    if notice.title is None:
        notice.title, notice.body = _compose(record, event)
    notice.claim = Claim(me.pid, me.create_time, now + LEASE_S)
    notice.attempts += 1
    record.notices[event] = notice
    attempt.notice = notice
    attempt.env = {"ORCH_RUN_ID": record.run_id, "ORCH_TICKET": str(record.ticket_id), "ORCH_STATE": record.state}
    return True


def deliver(run: RunDir | Path, event: str, notifier: Notifier, now: float | None = None) -> str:
    """Try to deliver one notice; returns what happened (delivered/failed/skipped:...)."""
    now = time.time() if now is None else now
    me = proc.ProcRef.of(os.getpid())
    attempt = _Attempt()
    state_file.update(run, lambda r: _claim(r, event, me, now, attempt))
    sent = attempt.notice
    if sent is None:
        return attempt.why
    try:
        ok, error = notifier.send(
            _event(event), sent.title or "", sent.body or "", set(sent.channels_done), attempt.env
        )
    except Exception as exc:
        ok, error = set(), f"sending failed: {type(exc).__name__}: {exc}"
    outcome: list[str] = []

    def record(r: RunRecord) -> None:
        cur = r.notice(event)
        cur.channels_done = sorted(set(cur.channels_done) | ok)
        mine = cur.claim is not None and cur.claim.holder == me
        if not mine and error is not None:
            outcome.append(f"failed: {error} (another process holds the claim now)")
            return  # our lease ran out and someone else is sending: leave the record to them
        if mine:
            cur.claim = None
        if error is None:
            cur.delivered, cur.delivered_at, cur.last_error, cur.next_attempt_at = True, state_file.utcnow(), None, None
            if event == "spiral":
                r.spiral.notified = True
            outcome.append("delivered")
        else:
            cur.last_error, cur.last_attempt_at = error, state_file.utcnow()
            cur.next_attempt_at = time.time() + notifier.backoff(max(1, cur.attempts))
            outcome.append(f"failed: {error}")

    state_file.update(run, record)
    return outcome[0]


def deliver_due(run: RunDir | Path, notifier: Notifier) -> list[tuple[str, str]]:
    record = state_file.read(run)
    return [(event, deliver(run, event, notifier)) for event in due(record, notifier)]
