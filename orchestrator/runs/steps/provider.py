"""Step: the agent's model API as the record shows it: retrying now (one episode), or fine."""

from __future__ import annotations

from orchestrator.notify import pages
from orchestrator.notify.kinds import NoticeKind
from orchestrator.record.model import ProviderStatus, RunRecord
from orchestrator.runs.events import Event, Kind, of
from orchestrator.runs.steps.base import LIVE
from orchestrator.runs.steps.context import Pass
from spiral.timestamps import format_ts

PROVIDER_NOTICE_ATTEMPTS = 3  # a retry or two is routine; the third in one episode is worth a notice


class ProviderNotice:
    """The agent's model API failing again and again in one episode (`provider-<episode>`)."""

    event = "provider"
    default_on = True
    ending = False

    def keys(self, record: RunRecord) -> list[str]:
        p = record.provider
        return [f"provider-{p.episode}"] if p is not None and (p.attempt or 0) >= PROVIDER_NOTICE_ATTEMPTS else []

    def compose(self, record: RunRecord, key: str) -> tuple[str, str]:
        return pages.provider_notice(record)


class Provider:
    name = "provider"
    phases = frozenset({LIVE})
    owns: frozenset[str] = frozenset({"provider"})
    notices: tuple[NoticeKind, ...] = (ProviderNotice(),)

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
