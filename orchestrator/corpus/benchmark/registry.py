"""The benchmark's family registry: what a scenario family is, its labels, and shared timing helpers."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.corpus.timeline import Timeline


@dataclass(frozen=True)
class Labels:
    must_page: bool
    signal: str | None  # the signal that should name the spiral
    onset_min: float | None  # when the spiral starts (positives)
    window: tuple[float, float] | None  # when a page is right (positives)


@dataclass(frozen=True)
class Family:
    name: str
    positive: bool
    description: str
    build: Callable[[Timeline, random.Random, float, float, float], Labels | tuple[Labels, float]]


def registrar(into: list[Family]) -> Callable[[str, bool, str], Callable[..., Any]]:
    """A `@family(name, positive, description)` decorator that appends to `into`, in definition order."""

    def family(name: str, positive: bool, description: str) -> Callable[..., Any]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            into.append(Family(name, positive, description, fn))
            return fn

        return register

    return family


def pick_onset(rng: random.Random, expected: float, soft: float) -> float:
    return round(rng.uniform(0.25 * expected, soft - 12), 1)


def pick_late_or_early(rng: random.Random, expected: float, soft: float) -> float:
    """A quarter of the fast-to-detect loops start only inside the soft band."""
    return pick_onset(rng, expected, soft) if rng.random() < 0.75 else round(soft + 0.5, 1)


def positive_labels(signal: str, onset: float, soft: float, stuck: float) -> Labels:
    return Labels(True, signal, onset, (max(onset, soft), stuck))


def negative_labels() -> Labels:
    return Labels(False, None, None, None)
