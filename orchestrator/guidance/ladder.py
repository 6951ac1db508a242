"""The opt-in escalation ladder: which rung is due, from the run's facts. Pure: no clock, no I/O.

A ladder is a list of rungs (`escalation:` in a ticket's front matter or a profile in config.yaml):

    escalation:
      - {do: nudge, after_minutes: 3}
      - {do: redirect, after_minutes: 5}
      - {do: wrap-up, after_minutes: 5}
      - {do: stop, after_minutes: 5}

It starts with the run's page. Rung k is due once the detector's evidence has gone on for
`after_minutes` (run minutes) past the previous rung's receipt (the first rung: past the page),
with the windows restarted at that receipt, so only what the agent did after being told counts.
A rung whose guidance never arrived (withdrawn: see orchestrator/runs/steering/track.py) counts from when it was given up.
Without a ladder nothing here runs, and the product never acts on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator.record.model import Escalation, Guidance, Rung

ACTIONS = ("nudge", "redirect", "wrap-up", "stop")


class LadderError(ValueError):
    """A ladder that cannot be used: `path` names the key, the message says why."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path, self.message = path, message


def parse(raw: Any, key: str = "escalation") -> list[Rung]:
    if raw is None or raw is False:
        return []
    if not isinstance(raw, list) or not raw:
        raise LadderError((key,), f"{key} must be a list of rungs like {{do: nudge, after_minutes: 3}}")
    rungs = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise LadderError((key, i), f"{key}[{i}] must be a mapping with do and after_minutes")
        unknown = sorted(set(item) - {"do", "after_minutes", "text"})
        if unknown:
            raise LadderError(
                (key, i, unknown[0]), f"{key}[{i}]: unknown key {unknown[0]!r} (known: do, after_minutes, text)"
            )
        action = item.get("do")
        if action not in ACTIONS:
            raise LadderError((key, i, "do"), f"{key}[{i}].do must be one of {', '.join(ACTIONS)}, got {action!r}")
        after = item.get("after_minutes")
        if isinstance(after, bool) or not isinstance(after, (int, float)) or not 0 < after < float("inf"):
            raise LadderError(
                (key, i, "after_minutes"), f"{key}[{i}].after_minutes must be a positive number, got {after!r}"
            )
        text = item.get("text")
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise LadderError((key, i, "text"), f"{key}[{i}].text must be non-empty text")
        if text is not None and action == "stop":
            raise LadderError((key, i, "text"), f"{key}[{i}]: a stop rung sends no text")
        rungs.append(Rung(action=action, after_min=float(after), text=text))
    if any(r.action == "stop" for r in rungs[:-1]):
        raise LadderError((key,), f"{key}: stop must be the last rung")
    return rungs


@dataclass(frozen=True)
class Due:
    rung: int  # 1-based
    action: str
    why: str


def anchor(climbed: list[Escalation], guidance: list[Guidance], page_at_min: float | None) -> float | None:
    """From when the next rung counts: the last rung's receipt (or its giving up), else the page."""
    if not climbed:
        return page_at_min
    last = climbed[-1]
    g = next((g for g in guidance if g.id == last.guidance_id), None)
    if g is None:
        return last.at_min
    if g.received_at_min is not None:
        return g.received_at_min
    if g.undelivered is not None:
        return g.answer_at_min if g.answer_at_min is not None else last.at_min
    return None  # still on its way: the next rung waits for the receipt


def next_due(
    rungs: list[Rung],
    climbed: list[Escalation],
    guidance: list[Guidance],
    *,
    page_at_min: float | None,
    evidence_since_min: float | None,
    now_min: float,
) -> Due | None:
    """The rung to climb now, or None. `evidence_since_min`: since when the verdict has been tripped
    without a break (None: not tripped now)."""
    if not rungs or len(climbed) >= len(rungs) or page_at_min is None or evidence_since_min is None:
        return None
    start = anchor(climbed, guidance, page_at_min)
    if start is None:
        return None
    rung = rungs[len(climbed)]
    since = max(start, evidence_since_min)
    if now_min - since < rung.after_min:
        return None
    after = "the page" if not climbed else f"rung {len(climbed)} ({climbed[-1].action}) reached the agent"
    why = f"spiral evidence went on for {now_min - since:.1f} min after {after} (rung after {rung.after_min:g} min)"
    return Due(len(climbed) + 1, rung.action, why)
