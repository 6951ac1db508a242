"""The run record's migrations: each turns a `state.json` of one version into the next
(orchestrator/record/model.py reads every version it knows; docs/record-versions.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _from_v1(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 1 (an untyped dict): same keys, any of them possibly absent or null.

    A null where version 2 has a non-optional field means "unknown": drop it, so the default applies.
    """
    for key in _V1_NULLABLE:
        if key in raw and raw[key] is None:
            del raw[key]
    return raw


_V1_NULLABLE = (
    "spiral",
    "notices",
    "overrides",
    "env",
    "argv",
    "outputs",
    "hints",
    "version_command",
    "time_scale",
    "snapshot_every_s",
    "prompt_mode",
)


def _from_v2(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 2 to 3: nothing to change. Version 3 adds the `over_budget` ending (a spend ceiling stopped
    the run) and the queue's and the ceilings' fields, all optional; it is a new version so that an older
    orchestrator refuses a record whose ending it would not know, rather than misreading it."""
    return raw


def _from_v3(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 3 to 4: nothing to change. Version 4 adds the endings `no_change` (the agent exited 0 but
    changed nothing the ticket asked for) and `gave_up` (its final message said it did not finish)
    (runs/endings.py), and the optional `start_commit`; a new version, so that an older orchestrator
    refuses such a record."""
    return raw


def _from_v4(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 4 to 5: the spend step's fields and the ladder step's move into their parts, so that each
    step of a watcher pass writes only its own part of the record (runs/pipeline.py)."""
    for part, moves in _V5_PARTS.items():
        moved = {new: raw.pop(old) for old, new in moves if old in raw}
        if moved:
            raw[part] = {**(raw.get(part) or {}), **moved}
    return raw


# part -> (version-4 key, its name in the part)
_V5_PARTS = {
    "ceilings": (
        ("max_usd", "max_usd"),
        ("max_tokens", "max_tokens"),
        ("budget_warned_at", "warned_at"),
        ("budget_unpriced", "unpriced"),
        ("spend_live", "live"),
    ),
    "ladder": (("escalation", "rungs"), ("escalations", "climbed"), ("ladder_snoozed_until", "snoozed_until")),
}


# version -> the step that turns a record of that version into the next one
MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _from_v1, 2: _from_v2, 3: _from_v3, 4: _from_v4}
