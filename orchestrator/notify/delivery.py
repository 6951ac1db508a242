"""Exactly-once-or-retried delivery of a run's notifications.

Each notice (the spiral page, an ending notice) lives in the run record under
`notices.<event>`. A sender first *claims* it under the run lock (a lease
naming its pid and create time, valid for the attempt's deadline plus a
grace), sends with the lock released, then records the outcome under the lock
again:

- delivered: each channel is recorded done the moment it succeeds, the flag
  once all have; nobody sends it again, across processes and restarts;
- failed: attempts, the last error and the next attempt time (exponential
  backoff) are recorded, and a later pass retries;
- in flight: while the lease is alive nobody starts the notice again. `start`
  sends in a worker thread, so the caller (the watcher's tick) waits at most
  `WAIT_S` and goes on; the attempt ends by its deadline (`Notifier.timeout_s`)
  and records itself. A lease still held past deadline + grace is a stuck
  sender: the attempt is recorded as failed and retried after the backoff;
- the sender died between sending and recording: its lease names a dead
  process, so the next pass sends again. Delivery is therefore at-least-once
  in that one window (from the receiver's 200 to the channel's record write,
  a few milliseconds); every copy carries the same idempotency key
  (`<run id>/<notice key>`), so a receiver that honours it drops the repeat.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.infra import proc
from orchestrator.notify import buttons
from orchestrator.notify.channels import Notifier
from orchestrator.notify.kinds import NoticeKind, event_of, kind_for, vocabulary
from orchestrator.notify.pages import redact_cut
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import Claim, Notice, RunRecord

LEASE_GRACE_S = 15.0  # a lease lasts the attempt's deadline plus this
# attempts of one channel that got no answer in time, before that channel is given up: each may have been
# delivered (a receiver slower than the deadline would otherwise get the same page at every retry, forever)
MAX_UNANSWERED = 3
# attempts in all before a notice is given up (a revoked token, a target gone for good: about 4 h of backoff)
MAX_ATTEMPTS = 20
WAIT_S = 0.5  # how long a caller of `start(..., background=True)` may wait for a quick answer


def due(record: RunRecord, notifier: Notifier, kinds: Sequence[NoticeKind]) -> list[str]:
    """Notices of this run that should be (or still be) sent, by key, of the kinds the targets want."""
    events = notifier.events if notifier.events is not None else vocabulary(kinds).defaults
    out = [key for kind in kinds if kind.event in events for key in kind.keys(record)]
    return [e for e in out if not (e in record.notices and (record.notices[e].delivered or record.notices[e].gave_up))]


def idempotency_key(run_id: str, key: str) -> str:
    """The same for every attempt at one notice, in every process: `<run id>/<notice key>`."""
    return f"{run_id}/{key}"


@dataclass
class _Attempt:
    notice: Notice | None = None
    why: str = "skipped"
    env: dict[str, str] = field(default_factory=dict)
    key: str = ""
    link: str | None = None  # the run page (`serve.public_url`)
    ntfy: dict[str, str] = field(default_factory=dict)  # ntfy's click URL and buttons (notify/buttons.py)


def _claim(
    record: RunRecord,
    event: str,
    me: proc.ProcRef,
    now: float,
    attempt: _Attempt,
    n: Notifier,
    kinds: Sequence[NoticeKind],
) -> bool:
    """Take the notice for one attempt (attempt.notice set); returns whether the record changed."""
    notice = record.notices.get(event) or Notice()
    if notice.delivered:
        attempt.why = "skipped: already delivered"
        return False
    if notice.gave_up:
        attempt.why = "skipped: given up"
        return False
    if (notice.next_attempt_at or 0) > now:
        attempt.why = "skipped: waiting to retry"
        return False
    lease = notice.claim
    if lease is not None and lease.holder.alive():
        if lease.expires > now:
            attempt.why = "skipped: in flight (another sender holds its lease)"
            return False
        # alive past its deadline: a stuck sender. Its attempt failed; the retry waits for the backoff
        notice.claim = None
        notice.last_error = f"the attempt did not finish within its {n.timeout_s:g} s deadline"
        notice.last_attempt_at = state_file.utcnow()
        notice.next_attempt_at = now + n.backoff(max(1, notice.attempts))
        record.notices[event] = notice
        attempt.why = f"failed: {notice.last_error}"
        return True
    if notice.title is None:
        notice.title, notice.body = kind_for(kinds, event).compose(record, event)
    notice.claim = Claim(me.pid, me.create_time, now + n.timeout_s + LEASE_GRACE_S)
    notice.attempts += 1
    record.notices[event] = notice
    attempt.notice = notice
    attempt.key = idempotency_key(record.run_id, event)
    attempt.env = {
        "ORCH_RUN_ID": record.run_id,
        "ORCH_TICKET": str(record.ticket_id),
        "ORCH_STATE": record.state,
        "ORCH_IDEMPOTENCY_KEY": attempt.key,
    }
    attempt.link, attempt.ntfy = buttons.for_notice(record, event, n.serve, now)
    if attempt.link is not None:
        attempt.env["ORCH_RUN_URL"] = attempt.link
    return True


@dataclass
class Sending:
    """One attempt at a notice: its outcome once known (delivered/failed/skipped:...)."""

    event: str
    outcome: list[str] = field(default_factory=list)
    thread: threading.Thread | None = None

    def wait(self, timeout: float | None = None) -> str:
        if self.thread is not None:
            self.thread.join(timeout)
        return self.outcome[0] if self.outcome else "in flight"


def start(
    run: RunDir | Path,
    event: str,
    notifier: Notifier,
    kinds: Sequence[NoticeKind],
    now: float | None = None,
    *,
    background: bool = False,
) -> Sending:
    """Claim one notice and send it: here, or (`background`) in a worker thread that records its own outcome.

    The thread is not a daemon: a short-lived caller (`status`) exits only once
    its attempts have ended (by their deadline), so it never leaves a live lease
    behind that a dead process would hold.
    """
    now = time.time() if now is None else now
    me = proc.ProcRef.of(os.getpid())
    attempt = _Attempt()
    state_file.update(run, lambda r: _claim(r, event, me, now, attempt, notifier, kinds))
    sending = Sending(event)
    if attempt.notice is None:
        sending.outcome.append(attempt.why)
        return sending

    def job() -> None:
        sending.outcome.append(_send(run, event, notifier, me, attempt))

    if not background:
        job()
        return sending
    sending.thread = threading.Thread(target=job, name=f"notice {event}", daemon=False)
    sending.thread.start()
    return sending


def deliver(
    run: RunDir | Path, event: str, notifier: Notifier, kinds: Sequence[NoticeKind], now: float | None = None
) -> str:
    """Try to deliver one notice, here and now; returns what happened (delivered/failed/skipped:...)."""
    return start(run, event, notifier, kinds, now).wait()


def _mark_done(r: RunRecord, event: str, channel: str) -> bool:
    cur = r.notice(event)
    if channel in cur.channels_done:
        return False
    cur.channels_done = sorted({*cur.channels_done, channel})
    return True


def _send(run: RunDir | Path, event: str, notifier: Notifier, me: proc.ProcRef, attempt: _Attempt) -> str:
    sent = attempt.notice
    assert sent is not None

    def progress(channel: str) -> None:  # the duplicate window closes here, channel by channel
        try:
            state_file.update(run, lambda r: _mark_done(r, event, channel))
        except Exception:
            pass  # recorded with the outcome below

    link = f"\n\nopen: {attempt.link}" if attempt.link else ""
    body = f"{sent.body or ''}{link}\n\nidempotency key: {attempt.key}"
    unanswered: set[str] = set()
    skip = set(sent.channels_done) | set(_given_up(sent))
    try:
        ok, error = notifier.send(
            event_of(event), sent.title or "", body, skip, attempt.env, attempt.key, progress, unanswered, attempt.ntfy
        )
    except Exception as exc:
        ok, error = set(), f"sending failed: {type(exc).__name__}: {exc}"
    if error is not None:  # a hook's stderr or a library's message may quote a URL's password or a token
        error = redact_cut(error)
    outcome: list[str] = []

    def record(r: RunRecord) -> None:
        cur = r.notice(event)
        cur.channels_done = sorted(set(cur.channels_done) | ok)
        mine = cur.claim is not None and cur.claim.holder == me
        if not mine and error is not None:
            outcome.append(f"failed: {error} (another sender holds the claim now)")
            return  # our lease ran out and someone else is sending: leave the record to them
        if mine:
            cur.claim = None
        for channel in unanswered:
            cur.unanswered[channel] = cur.unanswered.get(channel, 0) + 1
        dropped = _given_up(cur)
        if error is None and not dropped:
            cur.delivered, cur.delivered_at, cur.last_error, cur.next_attempt_at = True, state_file.utcnow(), None, None
            if event == "spiral":
                r.spiral.notified = True
            outcome.append("delivered")
        elif error is None:  # every other channel took it; the ones that never answered in time are given up
            cur.gave_up, cur.next_attempt_at, cur.last_attempt_at = True, None, state_file.utcnow()
            cur.last_error = (
                f"gave up on {len(dropped)} target{'s' if len(dropped) > 1 else ''} after {MAX_UNANSWERED} attempts"
                " that got no answer in time (each may have arrived: raise notify.timeout_seconds for a slow"
                " receiver)" + ("; the others took it" if cur.channels_done else "")
            )
            if event == "spiral" and cur.channels_done:
                r.spiral.notified = True
            outcome.append(f"gave up: {cur.last_error}")
        else:
            cur.last_error, cur.last_attempt_at = error, state_file.utcnow()
            cur.next_attempt_at = time.time() + notifier.backoff(max(1, cur.attempts))
            if cur.attempts >= MAX_ATTEMPTS or error.startswith("no notification target takes"):
                cur.gave_up, cur.next_attempt_at = True, None
                cur.last_error = f"{error}; gave up after {cur.attempts} attempt{'s' if cur.attempts > 1 else ''}"
                outcome.append(f"gave up: {cur.last_error}")
            else:
                outcome.append(f"failed: {error}")

    try:
        state_file.update(run, record)
    except Exception as exc:  # the lease runs out and a later pass takes over
        return f"failed: the outcome could not be recorded: {type(exc).__name__}: {exc}"
    return outcome[0]


def _given_up(notice: Notice) -> list[str]:
    """The channels of `notice` given up: no answer in time, MAX_UNANSWERED times."""
    return sorted(c for c, n in notice.unanswered.items() if n >= MAX_UNANSWERED)


def deliver_due(run: RunDir | Path, notifier: Notifier, kinds: Sequence[NoticeKind]) -> list[tuple[str, str]]:
    record = state_file.read(run)
    return [(event, deliver(run, event, notifier, kinds)) for event in due(record, notifier, kinds)]
