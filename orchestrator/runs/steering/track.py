"""A run's guidance, kept in its record: queued, received (the receipt), undelivered, answered.

Called under the run's lock: `queue` by `nudge` and by the ladder, `receipts` by each pass before
the detector is fed (so the windows restart at the receipt, not a pass later), `after_verdict`
once the verdict is in, `run_ended` when the run is over. The inbox files are the hand-over
(inbox.py); the record is what `status`, the pages and the ledger read.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from orchestrator.guidance import inbox
from orchestrator.guidance.policy import Policy
from orchestrator.notify.pages import redact
from orchestrator.record.clock import RunClock
from orchestrator.record.model import Episode, Guidance, RunRecord, SpiralState
from orchestrator.runs import evaluator
from orchestrator.runs.events import Event, Kind, of
from spiral.timestamps import format_ts
from spiral.verdict import Verdict

TEXT_KEPT = 400  # characters of the text kept in the record (the inbox file has it whole)
WITHDRAWN = "withdrawn"
LATE_RECEIPT_S = 30.0  # how long after a claim taken without its receipt the receipt is looked for


def minutes(record: RunRecord, real: float) -> float:
    clock = RunClock.of(record)
    return round(max(0.0, clock.seconds(real - clock.started_at)) / 60.0, 2)


def queue(gdir: Path, record: RunRecord, text: str, kind: str, by: str, real_now: float) -> Guidance:
    """Put a message in the run's inbox and its entry in the record (the caller holds the lock, writes)."""
    seq = max(len(record.guidance), inbox.highest_seq(gdir)) + 1  # never a name a file already has
    g = Guidance(
        id=f"g{seq}",
        seq=seq,
        kind=kind,
        by=by,
        text=_kept(text),
        via=record.guidance_via,
        queued_at=format_ts(real_now),
        queued_at_min=minutes(record, real_now),
    )
    inbox.queue(gdir, seq, g.id, text, kind, g.queued_at or "")
    record.guidance.append(g)
    return g


def _kept(text: str) -> str:
    text = redact(text.strip())
    return text if len(text) <= TEXT_KEPT else text[: TEXT_KEPT - 3] + "..."


def _name(g: Guidance) -> str:
    return f"{g.seq:04d}-{g.id}.json"


def outstanding(record: RunRecord) -> list[Guidance]:
    return [g for g in record.guidance if g.received_at is None and g.undelivered is None]


def register(record: RunRecord, cached: evaluator.Cached) -> None:
    """The receipts already recorded, given to the detector at the agent-clock moments they were taken
    (a cache rebuilt from the files learns them again before it is fed; known ones are skipped)."""
    for g in record.guidance:
        if g.received_epoch is not None and g.restart_at is not None:
            evaluator.restart_at(cached, g.received_epoch, g.restart_at)


def receipts(gdir: Path, record: RunRecord, cached: evaluator.Cached, real_now: float) -> list[Event]:
    """Fold new receipts into the record and restart the detector's windows at each; what happened.

    A reader renames a message into claimed/ and then writes its receipt: a pass that looked in
    between took the claim at its rename, without the receipt's `via`. The receipt is looked for
    again for LATE_RECEIPT_S after the claim (`real_now`: the pass's epoch seconds), and its
    `via` filled in when it comes."""
    register(record, cached)
    clock = RunClock.of(record)
    waiting = outstanding(record)
    late = [
        g
        for g in record.guidance
        if g.received_via is None and g.received_epoch is not None and real_now - g.received_epoch < LATE_RECEIPT_S
    ]
    if not waiting and not late:
        return []
    got = {c.message.name: c for c in inbox.claimed(gdir)}
    events: list[Event] = []
    for g in late:
        c = got.get(_name(g))
        if c is not None and c.via is not None:
            g.received_via = c.via
            events.append(of(Kind.GUIDANCE_RECEIPT, f"guidance {g.id} receipt"))
    for g in waiting:
        c = got.get(_name(g))
        if c is None:
            continue
        g.received_epoch = c.received_at
        g.received_at = format_ts(c.received_at)
        g.restart_at = cached.agent_time(clock.at(c.received_at))  # on the clock the verdicts use
        g.received_at_min = round(max(0.0, g.restart_at - clock.started_at) / 60.0, 2)
        g.received_via = c.via
        g.signals_at_receipt = list(record.spiral.signals)
        evaluator.restart_at(cached, c.received_at, g.restart_at)
        s = record.spiral
        s.windows_since_min = g.received_at_min
        current_tripped = (
            s.tripped_in_soft_band if s.episode == 1 else bool(s.episodes and s.episodes[-1].tripped_at_min is not None)
        )
        if current_tripped:  # the person (or the ladder) acted on a page: what comes next is a new episode
            s.episode += 1
            s.episodes.append(Episode(n=s.episode, since_min=g.received_at_min))
        s.tripped_since_min = None
        events.append(of(Kind.GUIDANCE_RECEIVED, f"guidance {g.id} received"))
    return events


def after_verdict(
    gdir: Path, record: RunRecord, cached: evaluator.Cached, verdict: Verdict, real_now: float, policy: Policy
) -> list[Event]:
    """The first calls after each receipt, answers whose window closed, messages past the delivery bound."""
    now_min = minutes(record, real_now)  # the wall's run minutes: how long a message has waited
    agent_min = round(verdict.elapsed_min, 2)  # the agent's: as the receipts, the trips and the answers
    events: list[Event] = []
    events += _followed(record, cached)
    for i, g in enumerate(record.guidance):
        if g.received_at_min is None or g.answer not in (None, "recovered"):
            continue
        answer = _answer(record, i, verdict, agent_min, policy)
        if answer is not None and answer != g.answer:
            g.answer, g.answer_at_min = answer, agent_min
            events.append(of(Kind.GUIDANCE_ANSWERED, f"guidance {g.id} {answer}"))
    for g in outstanding(record):
        if g.queued_at_min is not None and now_min - g.queued_at_min >= policy.deliver_min:
            why = (
                f"not received within {policy.deliver_min:g} min: the agent reached no turn boundary "
                "(no tool call finished) since it was queued"
            )
            if withdraw(gdir, g, why, now_min):
                events.append(of(Kind.GUIDANCE_UNDELIVERED, f"guidance {g.id} undelivered"))
    return events


def _followed(record: RunRecord, cached: evaluator.Cached) -> list[Event]:
    """The first calls after each receipt, as far as the detector has seen them."""
    events: list[Event] = []
    for g in record.guidance:
        if g.received_epoch is not None and len(g.first_calls_after) < evaluator.FOLLOWERS:
            first = evaluator.followers(cached, g.received_epoch)
            if first is not None and len(first) > len(g.first_calls_after):
                g.first_calls_after = first
                events.append(of(Kind.GUIDANCE_FOLLOWED))
    return events


def _tripped_after(record: RunRecord, i: int) -> bool:
    """Whether the detector paged on what the agent did after message i's receipt (and before the next one)."""
    g = record.guidance[i]
    start = g.received_at_min or 0.0
    later = [x.received_at_min for x in record.guidance[i + 1 :] if x.received_at_min is not None]
    end = min(later) if later else float("inf")
    s = record.spiral
    trips = [s.tripped_at_min] + [e.tripped_at_min for e in s.episodes]
    return any(t is not None and start <= t < end for t in trips)


def _answer(record: RunRecord, i: int, verdict: Verdict, now_min: float, policy: Policy) -> str | None:
    """recovered / ignored / nothing firing, or None while the window is open. A `recovered` is revised to
    `ignored` when the agent trips again later on what it did after this message (the windows restarted
    at the receipt, so a loop at a slow pace can look quiet when the window closes)."""
    g = record.guidance[i]
    if not g.signals_at_receipt:
        return "nothing firing"  # sent while no signal fired: there is no behaviour to change
    if _tripped_after(record, i):
        return "ignored"  # it tripped again on what the agent did after it
    if g.answer is not None or now_min - (g.received_at_min or 0.0) < policy.answer_min:
        return None
    still = set(verdict.signals) & set(g.signals_at_receipt)
    return "ignored" if still else "recovered"


def withdraw(gdir: Path, g: Guidance, why: str, now_min: float) -> bool:
    """Take a message back out of the inbox; False when the agent claimed it first (it is received)."""
    src = gdir / inbox.INBOX / _name(g)
    dst_dir = gdir / WITHDRAWN
    try:
        dst_dir.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst_dir / _name(g))
    except FileNotFoundError:
        if (gdir / inbox.CLAIMED / _name(g)).exists():
            return False  # claimed meanwhile: the next pass records its receipt
    except OSError:
        return False
    g.undelivered, g.answer_at_min = why, now_min
    return True


def run_ended(
    gdir: Path, record: RunRecord, cached: evaluator.Cached | None, real_now: float, final: Verdict | None = None
) -> list[Event]:
    """The run is over: receipts that came in last, then nothing still queued is left pretending.
    `final`: the verdict on the whole log, which answers the messages whose window was still open."""
    events = receipts(gdir, record, cached, real_now) if cached is not None else []
    if cached is not None:  # the last calls of a run that ended soon after a receipt
        events += _followed(record, cached)
    now_min = minutes(record, real_now)
    for g in outstanding(record):
        if withdraw(gdir, g, f"the run ended ({record.state}) before the agent's next turn boundary", now_min):
            events.append(of(Kind.GUIDANCE_UNDELIVERED, f"guidance {g.id} undelivered"))
    firing = set(final.signals if final is not None else record.spiral.signals)
    for i, g in enumerate(record.guidance):
        if g.received_at_min is not None and g.answer is None:
            if not g.signals_at_receipt:
                g.answer = "nothing firing"
            elif _tripped_after(record, i) or firing & set(g.signals_at_receipt):
                g.answer = "ignored"
            else:
                g.answer = "recovered"
            g.answer_at_min = round(final.elapsed_min, 2) if final is not None else now_min
            events.append(of(Kind.GUIDANCE_ANSWERED, f"guidance {g.id} {g.answer}"))
    return events


def episode(
    old: SpiralState, new: SpiralState, verdict: Verdict, cached: evaluator.Cached, now_min: float
) -> list[Event]:
    """Since when the verdict has been tripped (the ladder reads it), and a later episode's trip.

    Guidance reached the agent after the page and the windows restarted there, so a trip now rests on
    what the agent did since: it is the new episode's page (notice spiral-<n>), once, never a flood.
    """
    if not verdict.tripped:
        new.tripped_since_min = None
    elif old.tripped_since_min is None:
        new.tripped_since_min = now_min
    if not (verdict.should_page and new.episode > 1 and new.episodes and new.episodes[-1].tripped_at_min is None):
        return []
    ep = msgspec.structs.replace(
        new.episodes[-1],
        tripped_at_min=round(verdict.elapsed_min, 2),
        signals=list(verdict.signals),
        evidence=list(new.evidence),
        recent=evaluator.briefs(cached),
    )
    new.episodes = [*new.episodes[:-1], ep]
    return [of(Kind.TRIPPED_AGAIN, f"tripped again (episode {ep.n})")]


def status_fields(r: RunRecord) -> dict[str, object]:
    """`status --json`: how the agent takes guidance (null: it cannot), every message and its receipt, the ladder."""
    return {
        "guidance_via": r.guidance_via,
        "guidance": [msgspec.to_builtins(g) for g in r.guidance],
        "episode": r.spiral.episode,
        "escalation_rungs": len(r.ladder.rungs),
        "escalations": [msgspec.to_builtins(e) for e in r.ladder.climbed],
        "ladder_snoozed_until": r.ladder.snoozed_until,  # `snooze`: no rung is climbed until then
        # a person's verdicts on the pages (`feedback`), and the one-tap actions taken (`serve --actions`)
        "feedback": [msgspec.to_builtins(f) for f in r.feedback],
        "actions": [msgspec.to_builtins(a) for a in r.actions],
    }
