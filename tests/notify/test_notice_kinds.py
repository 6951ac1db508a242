"""Kinds of notice come from the steps (orchestrator/notify/kinds.py, runs/pipeline.py NOTICES): delivery
sends any kind the same way. `answer` is the kind added as one step-module class: what a person's message
came to, sent to a real HTTP receiver on 127.0.0.1 only when `notify.events` asks for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator import config
from orchestrator.infra.errors import UserError
from orchestrator.notify import delivery
from orchestrator.notify.channels import Notifier, Target, from_config
from orchestrator.notify.kinds import vocabulary
from orchestrator.record import state_file
from orchestrator.record.model import Ceilings, Escalation, EscalationLadder, Guidance, RunRecord
from orchestrator.runs.pipeline import NOTICES, STEPS
from tests.helpers import Receiver

SECRET = "sk-ant-api03-" + "x" * 40


def _record(**answers: str) -> RunRecord:
    guidance = [
        Guidance(id=gid, seq=i, by="person" if gid != "g9" else "escalation", text=f"try again, key {SECRET}")
        for i, gid in enumerate(answers, 1)
    ]
    for g in guidance:
        g.answer, g.answer_at_min, g.signals_at_receipt = answers[g.id], 41.5, ["stuck_check"]
    return RunRecord(run_id="r-3", ticket_id="t-7", state="running", guidance=guidance)


ENDINGS = {"stalled", "failed", "succeeded", "killed", "lost", "over_budget", "no_change", "gave_up"}
# sent without `notify.events`: every page and notice that needs a person, and every ending that went wrong
DEFAULTS = {"spiral", "provider", "escalation", "guidance", "budget", *ENDINGS - {"succeeded", "killed", "lost"}}


def test_every_kind_has_its_own_event_and_the_config_knows_it() -> None:
    events = [k.event for k in NOTICES]
    assert len(events) == len(set(events))
    vocab = vocabulary(NOTICES)  # what notify.events and a target's tags may name: the kinds' events, only those
    assert set(vocab.events) == {*DEFAULTS, "answer", "succeeded", "killed", "lost"}
    assert set(vocab.defaults) == DEFAULTS and vocab.endings == ENDINGS
    owners = {k.event: s.name for s in STEPS for k in s.notices}
    assert owners["spiral"] == "detection" and owners["answer"] == "answers" and owners["stalled"] == "ending"


class _LongRun:
    """A kind of notice as a step module would add it: nothing else names it anywhere."""

    event = "long_run"
    default_on = False
    ending = False

    def keys(self, record: RunRecord) -> list[str]:
        return ["long_run"] if record.spiral.tool_calls > 500 else []

    def compose(self, record: RunRecord, key: str) -> tuple[str, str]:
        return f"run {record.run_id}: {record.spiral.tool_calls} tool calls", "still going"


def test_a_new_kind_is_known_to_the_config_and_sent_with_no_other_change(home: Path, receiver: Receiver) -> None:
    kinds = (*NOTICES, _LongRun())
    cfg_file = home / "config.yaml"
    cfg_file.write_text(
        f"notify:\n  urls:\n    - url: {receiver.url}\n      tags: [long_run, ends]\n  events: [long_run]\n"
    )
    n = from_config(config.load(cfg_file), kinds)
    assert n.events == ("long_run",)
    r = RunRecord(run_id="r-4", state="running")
    r.spiral.tool_calls = 501
    run_dir = home / "runs" / "r-4"
    run_dir.mkdir(parents=True)
    state_file.write(run_dir, r)
    assert delivery.deliver_due(run_dir, n, kinds) == [("long_run", "delivered")]
    assert receiver.titles() == ["run r-4: 501 tool calls"]
    # without the kind, the config naming it is refused as before
    with pytest.raises(UserError, match=r"tags must name events among provider, spiral,") as refused:
        from_config(config.load(cfg_file), NOTICES)
    assert "long_run" not in str(refused.value).split("among", 1)[1]


def test_the_steps_kinds_make_the_same_notices_due_as_before() -> None:
    r = RunRecord(
        run_id="r-1",
        state="stalled",
        ceilings=Ceilings(warned_at=0.75),
        ladder=EscalationLadder(
            climbed=[Escalation(rung=1, action="nudge", at="2026-12-04T10:00:00Z", at_min=31.0, why="tripped")]
        ),
    )
    r.spiral.tripped_in_soft_band = True
    r.guidance = [Guidance(id="g1", seq=1, undelivered="not received within 10 min")]
    due = delivery.due(r, Notifier(), NOTICES)
    assert sorted(due) == sorted(["spiral", "escalation-1", "budget-70", "guidance-g1", "stalled"])


def test_an_answer_is_due_only_when_asked_for_and_only_for_a_person_s_message() -> None:
    r = _record(g1="ignored", g2="nothing firing", g3="recovered", g9="ignored")
    assert "answer" not in vocabulary(NOTICES).defaults
    assert not [k for k in delivery.due(r, Notifier(), NOTICES) if k.startswith("answer")]
    asked = Notifier(events=(*vocabulary(NOTICES).defaults, "answer"))
    assert [k for k in delivery.due(r, asked, NOTICES) if k.startswith("answer")] == ["answer-g1", "answer-g3"]


def test_the_answer_notice_reaches_a_receiver_once_with_no_secret(home: Path, receiver: Receiver) -> None:
    run_dir = home / "runs" / "r-3"
    run_dir.mkdir(parents=True)
    state_file.write(run_dir, _record(g1="ignored"))
    n = Notifier(targets=[Target(receiver.url)], events=("answer",))
    assert delivery.deliver_due(run_dir, n, NOTICES) == [("answer-g1", "delivered")]
    assert delivery.deliver_due(run_dir, n, NOTICES) == []  # delivered: never due again
    assert receiver.titles() == ["run r-3: guidance g1 ignored"]
    (body,) = receiver.messages()
    assert "guidance g1 was ignored at minute 41.5: the loop went on" in body
    assert "stuck_check" in body and "kill r-3" in body
    assert SECRET not in body and "try again" in body
