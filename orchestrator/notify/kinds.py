"""The notice seam: a kind of notice says which of its notices a run's record makes due, and writes
each one's title and body. `notify/delivery.py` sends any kind it is given, the same way.

The kinds live with the step of the watcher pass that owns their facts (`runs/steps/`): the spiral
page with detection, the ladder's notices with the ladder, and so on; `runs/pipeline.py` gathers
them in `NOTICES`. A new kind of notice is a class in one step module: the events that
`notify.events` and the targets' `tags` may name are the kinds' own (`vocabulary`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from orchestrator.record.model import RunRecord


class NoticeKind(Protocol):
    event: str  # what `notify.events` and a target's `tags` name it: the first part of its keys
    default_on: bool  # sent unless `notify.events` leaves it out (off: only when it names it)
    ending: bool  # a way a run ends: a target tagged `ends` gets it too

    def keys(self, record: RunRecord) -> list[str]:
        """The notices of this kind the record makes due, by key (`<event>` or `<event>-<part>`)."""

    def compose(self, record: RunRecord, key: str) -> tuple[str, str]:
        """One notice's title and body."""


@dataclass(frozen=True)
class Vocabulary:
    """The events the kinds of notice answer to: what `notify.events` and the targets' `tags` may name."""

    events: tuple[str, ...]
    defaults: tuple[str, ...]  # sent when `notify.events` is not given
    endings: frozenset[str]  # what the tag `ends` stands for

    @property
    def tags(self) -> tuple[str, ...]:
        return (*self.events, "ends")


def vocabulary(kinds: Sequence[NoticeKind]) -> Vocabulary:
    events = tuple(dict.fromkeys(k.event for k in kinds))
    defaults = tuple(dict.fromkeys(k.event for k in kinds if k.default_on))
    return Vocabulary(events, defaults, frozenset(k.event for k in kinds if k.ending))


def event_of(key: str) -> str:
    """The event a notice key is for (`provider-2` -> `provider`), which routes it to targets."""
    return key.split("-", 1)[0]


def kind_for(kinds: Sequence[NoticeKind], key: str) -> NoticeKind:
    event = event_of(key)
    for kind in kinds:
        if kind.event == event:
            return kind
    raise KeyError(f"no kind of notice for {key!r}")
