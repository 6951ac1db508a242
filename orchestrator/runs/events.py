"""What one watcher pass did to a run: typed events, each with the line `watch` prints for it.

A pass collects them in `RunView.events`. Behaviour reads the kind, never the text: the case file
learns its restarts when a pass saw guidance `RECEIVED`, the pass writes the record when any event
came, and `watch` prints every event but the bookkeeping ones (`QUIET`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Kind(enum.Enum):
    EVALUATED = "evaluated"  # the verdict changed and was written
    SPEND = "spend"  # the running spend total was written
    TRIPPED = "tripped"  # the page's verdict: suspicion reached the threshold
    TRIPPED_AGAIN = "tripped again"  # a later episode tripped, after guidance was received
    PROVIDER = "provider"  # the agent is retrying its model API
    PROVIDER_RECOVERED = "provider recovered"
    QUEUED_AGAIN = "queued again"  # put back in the queue (a lost seat, a held run)
    ENDED = "ended"  # the pass recorded the run's ending (its state is the text)
    BUDGET = "budget"  # a spend ceiling warned, or cannot be held
    ESCALATION = "escalation"  # the ladder climbed a rung
    NOTICE = "notice"  # a notice was sent, or failed
    TRACE = "trace"  # an ended run's trace export
    GUIDANCE_RECEIPT = "guidance receipt"  # the hook or the agent's log showed the message arriving
    GUIDANCE_RECEIVED = "guidance received"  # a message reached the agent: the windows restart there
    GUIDANCE_ANSWERED = "guidance answered"  # what the loop did after it (followed, ignored ...)
    GUIDANCE_UNDELIVERED = "guidance undelivered"
    GUIDANCE_FOLLOWED = "guidance followed"


QUIET = frozenset({Kind.EVALUATED, Kind.SPEND})  # bookkeeping: written, never printed by `watch`


@dataclass(frozen=True, slots=True)
class Event:
    kind: Kind
    text: str  # the line `watch` prints: "tripped", "guidance g1 received", "spiral notice delivered" ...

    def __str__(self) -> str:
        return self.text


def of(kind: Kind, text: str | None = None) -> Event:
    """An event of `kind`, its text the kind's own unless given."""
    return Event(kind, kind.value if text is None else text)
