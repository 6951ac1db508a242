"""Step: the agent's model API as the record shows it: retrying now (one episode), or fine."""

from __future__ import annotations

from orchestrator.record.model import ProviderStatus
from orchestrator.runs.events import Event, Kind, of
from orchestrator.runs.steps.base import LIVE
from orchestrator.runs.steps.context import Pass
from spiral.timestamps import format_ts


class Provider:
    name = "provider"
    phases = frozenset({LIVE})

    def apply(self, p: Pass) -> list[Event]:
        assert p.cached is not None
        outcome = p.cached.outcome
        ep = outcome.provider
        current = None
        if ep is not None:
            current = ProviderStatus(
                episode=len(outcome.episodes),
                text=ep.describe(),
                status=ep.status,
                error=ep.error,
                attempt=ep.attempt,
                max_retries=ep.max_retries,
                since=format_ts(ep.since),
            )
        if current == p.record.provider:
            return []
        p.record.provider = current
        return [of(Kind.PROVIDER if current is not None else Kind.PROVIDER_RECOVERED)]
