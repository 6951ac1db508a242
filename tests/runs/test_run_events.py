"""A watcher pass's events are typed (orchestrator/runs/events.py): behaviour reads the kind."""

from __future__ import annotations

from pathlib import Path

from orchestrator.record.model import RunRecord
from orchestrator.runs.events import QUIET, Event, Kind, of
from orchestrator.runs.view import RunView
from orchestrator.tables import watch_events


def test_an_event_prints_its_text_and_defaults_to_its_kind() -> None:
    assert str(of(Kind.TRIPPED)) == "tripped"
    assert of(Kind.GUIDANCE_RECEIVED, "guidance g2 received") == Event(Kind.GUIDANCE_RECEIVED, "guidance g2 received")
    assert str(of(Kind.ENDED, "stalled")) == "stalled"


def test_watch_prints_every_event_but_the_bookkeeping(tmp_path: Path) -> None:
    view = RunView(tmp_path / "r-1", RunRecord())
    view.events = [of(Kind.EVALUATED), of(Kind.SPEND), of(Kind.TRIPPED), of(Kind.NOTICE, "spiral notice delivered")]
    assert watch_events([view]) == ["r-1: tripped", "r-1: spiral notice delivered"]
    assert QUIET == {Kind.EVALUATED, Kind.SPEND}
