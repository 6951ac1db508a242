"""Exactly-once-or-retried delivery of a run's notifications.

Each notice (the spiral page, an ending notice) lives in state.json under
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
from pathlib import Path
from typing import Any

from orchestrator.infra import proc
from orchestrator.notify import pages
from orchestrator.notify.channels import ENDINGS, Notifier
from orchestrator.record import state_file

LEASE_S = 120.0


def due(state: dict[str, Any], notifier: Notifier) -> list[str]:
    """Events of this run that should be (or still be) notified."""
    out = []
    notices = state.get("notices") or {}
    if "spiral" in notifier.events and (state.get("spiral") or {}).get("tripped_in_soft_band"):
        out.append("spiral")
    ending = state.get("state")
    if ending in ENDINGS and ending in notifier.events:
        out.append(str(ending))
    return [e for e in out if not (notices.get(e) or {}).get("delivered")]


def _compose(state: dict[str, Any], event: str) -> tuple[str, str]:
    return pages.spiral_page(state) if event == "spiral" else pages.ending_notice(state, event)


def deliver(run_dir: Path, event: str, notifier: Notifier, now: float | None = None) -> str:
    """Try to deliver one notice; returns what happened (delivered/failed/skipped:...)."""
    now = time.time() if now is None else now
    me = proc.ProcRef.of(os.getpid())
    claimed: dict[str, Any] = {}

    def claim(s: dict[str, Any]) -> bool:
        rec = dict((s.get("notices") or {}).get(event) or {})
        if rec.get("delivered"):
            claimed["why"] = "skipped: already delivered"
            return False
        if rec.get("next_attempt_at", 0) > now:
            claimed["why"] = "skipped: waiting to retry"
            return False
        lease = rec.get("claim")
        holder = proc.ProcRef.from_dict(lease)
        if lease and holder is not None and holder.alive() and lease.get("expires", 0) > now:
            claimed["why"] = "skipped: another process is sending"
            return False
        if "title" not in rec:
            rec["title"], rec["body"] = _compose(s, event)
        rec["claim"] = {**me.to_dict(), "expires": now + LEASE_S}
        rec["attempts"] = int(rec.get("attempts", 0)) + 1
        s.setdefault("notices", {})[event] = rec
        claimed["rec"] = rec
        claimed["env"] = {
            "ORCH_RUN_ID": str(s.get("run_id")),
            "ORCH_TICKET": str(s.get("ticket_id")),
            "ORCH_STATE": str(s.get("state")),
        }
        return True

    state_file.update(run_dir, claim)
    rec = claimed.get("rec")
    if rec is None:
        return str(claimed.get("why", "skipped"))
    done_before = set(rec.get("channels_done") or [])
    try:
        ok, error = notifier.send(event, rec["title"], rec["body"], done_before, claimed["env"])
    except Exception as exc:
        ok, error = set(), f"sending failed: {type(exc).__name__}: {exc}"
    result: dict[str, str] = {}

    def record(s: dict[str, Any]) -> None:
        cur = s.setdefault("notices", {}).setdefault(event, {})
        cur["channels_done"] = sorted(set(cur.get("channels_done") or []) | ok)
        mine = proc.ProcRef.from_dict(cur.get("claim")) == me
        if not mine and error is not None:
            result["what"] = f"failed: {error} (another process holds the claim now)"
            return  # our lease ran out and someone else is sending: leave the record to them
        if mine:
            cur.pop("claim", None)
        if error is None:
            cur.update(delivered=True, delivered_at=state_file.utcnow(), last_error=None)
            cur.pop("next_attempt_at", None)
            if event == "spiral":
                s.setdefault("spiral", {})["notified"] = True
            result["what"] = "delivered"
        else:
            cur.update(
                last_error=error,
                last_attempt_at=state_file.utcnow(),
                next_attempt_at=time.time() + notifier.backoff(int(cur.get("attempts", 1))),
            )
            result["what"] = f"failed: {error}"

    state_file.update(run_dir, record)
    return result["what"]


def deliver_due(run_dir: Path, notifier: Notifier) -> list[tuple[str, str]]:
    state = state_file.read(run_dir)
    return [(event, deliver(run_dir, event, notifier)) for event in due(state, notifier)]
