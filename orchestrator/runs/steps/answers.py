"""Step: what the guidance came to: first calls after each receipt, answers whose window closed,
messages past the delivery bound; and, once the run ended, every message still open answered or
withdrawn."""

from __future__ import annotations

from orchestrator.infra.cli_name import CLI
from orchestrator.notify import pages
from orchestrator.notify.kinds import NoticeKind
from orchestrator.record.model import RunRecord
from orchestrator.runs.events import Event
from orchestrator.runs.steering import track
from orchestrator.runs.steps.base import CLOSING, LIVE, WITHDRAWING
from orchestrator.runs.steps.context import Pass


class UndeliveredNotice:
    """Guidance that never reached the agent (`guidance-<id>`): withdrawn, and said so."""

    event = "guidance"
    default_on = True
    ending = False

    def keys(self, record: RunRecord) -> list[str]:
        return [f"guidance-{g.id}" for g in record.guidance if g.undelivered is not None]

    def compose(self, record: RunRecord, key: str) -> tuple[str, str]:
        return pages.undelivered_notice(record, key.split("-", 1)[1])


# the answers worth telling whoever sent the message: it worked, or the loop went on
TOLD = {"recovered": "the signals that fired when it arrived have stopped", "ignored": "the loop went on"}


class AnswerNotice:
    """What a person's message came to (`answer-<id>`): recovered or ignored, once its window closed.
    Off unless `notify.events` names `answer`: the ladder already acts on an ignored rung of its own."""

    event = "answer"
    default_on = False  # the ladder already acts on an ignored rung of its own
    ending = False

    def keys(self, record: RunRecord) -> list[str]:
        return [f"answer-{g.id}" for g in record.guidance if g.by == "person" and g.answer in TOLD]

    def compose(self, record: RunRecord, key: str) -> tuple[str, str]:
        run, gid = record.run_id, key.split("-", 1)[1]
        g = next(g for g in record.guidance if g.id == gid)
        answer = str(g.answer)
        at = f" at minute {g.answer_at_min:g}" if g.answer_at_min is not None else ""
        lines = [
            f"Ticket {record.ticket_id} (run {run}): guidance {gid} was {answer}{at}: {TOLD[answer]}.",
            f"It said: {g.text}" if g.text else "",
            f"Signals when it arrived: {', '.join(g.signals_at_receipt) or 'none'}.",
            f"  {CLI} logs {run}",
            f"  {CLI} kill {run}" if answer == "ignored" else f"  {CLI} status",
        ]
        return pages.redact(f"run {run}: guidance {gid} {answer}"), pages.finish([x for x in lines if x])


class Answers:
    name = "answers"
    phases = frozenset({LIVE, CLOSING, WITHDRAWING})
    owns: frozenset[str] = frozenset({"guidance"})  # what each message came to
    notices: tuple[NoticeKind, ...] = (UndeliveredNotice(), AnswerNotice())

    def apply(self, p: Pass) -> list[Event]:
        if p.record.active:
            if not p.record.guidance:
                return []
            assert p.cached is not None and p.verdict is not None
            return track.after_verdict(p.rd.guidance, p.record, p.cached, p.verdict, p.real_now, p.cfg.guidance)
        return track.run_ended(p.rd.guidance, p.record, p.cached, p.real_now, p.final)
