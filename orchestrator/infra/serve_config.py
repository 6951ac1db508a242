"""`serve:` in config.yaml: where a phone reaches `serve` (the link every page and notice carries),
whether its one-tap actions are on, and how long an action's token lasts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from urllib.parse import quote, urlsplit

from msgspec import Meta

from orchestrator.infra.typed_yaml import Invalid, PositiveFloat, Strict

DEFAULT_TTL_HOURS = 24.0
TOKEN_HEADER = "X-Action-Token"  # where a notification's button carries its token (never in the address)


def action_path(run_id: str, action: str) -> str:
    """Where an action on a run is posted (`serve --actions`)."""
    return f"/runs/{quote(run_id, safe='')}/act/{quote(action, safe='')}"


@dataclass(frozen=True)
class ServeConfig:
    public_url: str | None = None  # e.g. https://runs.example.org (a proxy in front of `serve`), no trailing /
    actions: bool = False  # `serve` answers actions, and notifications carry buttons
    action_ttl_s: float = DEFAULT_TTL_HOURS * 3600.0

    @property
    def public_host(self) -> str | None:
        return urlsplit(self.public_url).hostname if self.public_url else None

    def run_url(self, run_id: str) -> str | None:
        """The run's page as a phone opens it, or None without a public URL."""
        return f"{self.public_url}/runs/{quote(run_id, safe='')}" if self.public_url else None


class ServeBlock(Strict):
    public_url: Annotated[str, Meta(description="must be an http:// or https:// URL")] | None = None
    actions: Annotated[bool, Meta(description="must be true or false")] = False
    action_ttl_hours: PositiveFloat = DEFAULT_TTL_HOURS

    def __post_init__(self) -> None:
        if self.public_url is None:
            return
        parts = urlsplit(self.public_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise Invalid("public_url", "must be an http:// or https:// URL with a host")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise Invalid("public_url", "must not carry a query, a fragment or credentials (no secret in a URL)")

    def config(self) -> ServeConfig:
        url = self.public_url.rstrip("/") if self.public_url else None
        return ServeConfig(url, self.actions, self.action_ttl_hours * 3600.0)
