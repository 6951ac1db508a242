"""The watcher pass as ordered steps (orchestrator/runs/tick.py, runs/pipeline.py): the order, the phases a step runs
in, which stop wins, and the verdict recorded only when something changed. Milliseconds each: the
end-to-end behaviour of every step stays covered by the run tests (test_run_watched.py and others)."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from orchestrator.config import UserConfig
from orchestrator.record.layout import RunDir
from orchestrator.record.model import Guidance, RunRecord
from orchestrator.runs import pipeline, tick
from orchestrator.runs.events import Event, Kind
from orchestrator.runs.liveness import Decision
from orchestrator.runs.steps import base
from orchestrator.runs.steps.context import STOP_ORDER, Pass
from orchestrator.runs.steps.episodes import Episodes
from orchestrator.runs.view import RunView
from tests.helpers import BUCKETS


def _pass(tmp_path: Path, record: RunRecord) -> Pass:
    rd = RunDir(tmp_path / "r-1")
    settings = BUCKETS.settings
    return Pass(rd, record, settings, UserConfig(path=tmp_path / "config.yaml"), 0.0, RunView(rd.path, record))


def test_the_steps_run_in_the_order_the_tick_documents() -> None:
    documented = re.findall(r"^\d+\. (\w+):", pipeline.__doc__ or "", re.M)
    assert [s.name for s in pipeline.STEPS] == documented
    assert len(documented) == 9


@pytest.mark.parametrize(
    "record, where",
    [
        (RunRecord(state="queued"), base.QUEUED),
        (RunRecord(state="running"), base.LIVE),
        (RunRecord(state="launching"), base.LIVE),
        (RunRecord(state="succeeded", format="generic"), base.CLOSING),
        (RunRecord(state="failed", guidance=[Guidance(id="g1", seq=1)]), base.WITHDRAWING),
        (RunRecord(state="stalled"), base.DONE),
    ],
)
def test_a_run_s_phase_decides_which_steps_run(record: RunRecord, where: str) -> None:
    assert base.phase(record) == where
    names = {s.name for s in pipeline.STEPS if where in s.phases}
    expected = {
        base.QUEUED: set(),
        base.LIVE: {"liveness", "feed", "provider", "detection", "episodes", "answers", "ladder", "spend"},
        base.CLOSING: {"feed", "answers", "ending"},
        base.WITHDRAWING: {"answers"},
        base.DONE: set(),
    }[where]
    assert names == expected


def test_a_dead_run_is_lost_whatever_else_asks_to_stop_it(tmp_path: Path) -> None:
    p = _pass(tmp_path, RunRecord(state="running"))
    assert tick.first_stop(p.stops) is None
    p.stops["pending"] = Decision("killed", "asked")
    p.stops["ladder"] = Decision("stalled", "rung 3")
    assert tick.first_stop(p.stops) == Decision("stalled", "rung 3")
    p.stops["budget"] = Decision("over_budget", "$2 of $1")
    assert tick.first_stop(p.stops) == Decision("over_budget", "$2 of $1")
    p.stops["liveness"] = Decision("lost", "its supervisor died")
    assert tick.first_stop(p.stops) == Decision("lost", "its supervisor died")
    assert STOP_ORDER == ("liveness", "budget", "ladder", "pending")


def test_the_verdict_is_recorded_only_when_it_changed_or_the_pass_did_something(tmp_path: Path) -> None:
    record = RunRecord(state="running")
    p = _pass(tmp_path, record)
    p.acts = False  # (a lost run: no episode is tracked)
    p.spiral = msgspec.structs.replace(record.spiral, tool_calls=record.spiral.tool_calls + 5)
    assert Episodes().apply(p) == []  # only the counts moved: no write for them
    assert record.spiral.tool_calls == 0
    p.spiral = msgspec.structs.replace(record.spiral, suspicion=2.0, signals=["polling"])
    assert [e.kind for e in Episodes().apply(p)] == [Kind.EVALUATED]
    assert record.spiral.signals == ["polling"]


def test_a_step_that_writes_outside_its_part_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Trespasser:
        name, phases, notices, owns = "trespasser", frozenset({base.LIVE}), (), frozenset({"provider"})

        def apply(self, p: Pass) -> list[Event]:
            p.record.hints = ["not mine"]
            return []

    p = _pass(tmp_path, RunRecord(state="running"))
    monkeypatch.setenv(base.CHECK_PARTS_ENV, "1")
    assert base.checking()
    with pytest.raises(base.PartError, match=r"trespasser wrote \['hints'\], outside its parts \['provider'\]"):
        base.checked(Trespasser(), p)
    monkeypatch.setenv(base.CHECK_PARTS_ENV, "0")  # (unchecked, as in production)
    assert not base.checking()
