"""How long guidance may take: config.yaml `guidance_deliver_minutes` and `guidance_answer_minutes`."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_DELIVER_MIN = 10.0
DEFAULT_ANSWER_MIN = 5.0


@dataclass(frozen=True)
class Policy:
    """Both in run minutes (the demo's fast clock runs them fast too)."""

    deliver_min: float = DEFAULT_DELIVER_MIN  # a message not received by then is withdrawn and reported
    answer_min: float = DEFAULT_ANSWER_MIN  # the signals firing at receipt must have stopped by then
