"""Which clone steps a ticket's run gets: `copy:`, `setup:`, `deliver:` and `pr_command:`, each from
the most specific place that gives it: the ticket, its agent profile, the `repos:` block of its
repository in config.yaml, then config.yaml's top level (deliver and pr_command only)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TypeVar

from orchestrator.config import CloneSteps, UserConfig, repo_key
from orchestrator.runs.tickets import VERIFY_TIMEOUT_S, Ticket

T = TypeVar("T")


def for_ticket(ticket: Ticket, cfg: UserConfig) -> CloneSteps:
    """The steps the ticket's run is launched with, every key settled (setup_timeout_s included)."""
    top = CloneSteps(deliver=cfg.deliver, pr_command=tuple(cfg.pr_command) or None)
    layers = [ticket.steps, cfg.profiles[ticket.agent].steps, cfg.repos.get(repo_key(ticket.repo), CloneSteps()), top]
    return CloneSteps(
        copy=_first(layer.copy for layer in layers) or (),
        setup=_first(layer.setup for layer in layers) or (),
        setup_timeout_s=_first(layer.setup_timeout_s for layer in layers) or VERIFY_TIMEOUT_S,
        deliver=_first(layer.deliver for layer in layers) or "branch",
        pr_command=_first(layer.pr_command for layer in layers) or (),
    )


def missing_copy_source(steps: CloneSteps) -> str | None:
    """The first `copy:` source that is not there to copy (said at launch, not minutes later), or None."""
    for source, _ in steps.copy or ():
        if not os.path.exists(source):
            return source
    return None


def _first(values: Iterable[T | None]) -> T | None:
    return next((value for value in values if value is not None), None)
