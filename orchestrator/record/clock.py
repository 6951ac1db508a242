"""A run's clock: wall-clock since launch, optionally sped up (the demo's fast clock)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spiral.timestamps import format_ts, parse_ts

if TYPE_CHECKING:
    from orchestrator.record.model import RunRecord


class RunClock:
    def __init__(self, started_at: float, scale: float = 1.0) -> None:
        self.started_at = started_at
        self.scale = scale

    @classmethod
    def of(cls, record: RunRecord) -> RunClock:
        started = parse_ts(record.started_at) or parse_ts(record.created_at) or 0.0
        return cls(started, record.time_scale or 1.0)

    def at(self, real_now: float) -> float:
        """Run time (epoch seconds on the run's clock) at a real moment."""
        return self.started_at + (real_now - self.started_at) * self.scale

    def iso(self, real_now: float) -> str:
        return format_ts(self.at(real_now))

    def seconds(self, real_seconds: float) -> float:
        """A real duration measured on the run's clock."""
        return real_seconds * self.scale
