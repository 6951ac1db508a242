"""Fewer passes of Python's cycle collector while a walk builds up many small objects.

A replay, an eval walk or a first pass over a long log allocates millions of small objects
(parsed lines, calls, window entries) and keeps tens of thousands of them alive until it ends.
With the default thresholds (700, 10, 10) the collector runs a pass every 700 allocations and a
full pass, over everything alive, every 70,000: measured on the detection benchmark's walks,
a fifth of the time went to the collector (speedbench/goals.py; docs/speed.md). These walks make
few reference cycles, so passes that rare cost little memory. Everything alive when the policy
starts is frozen out of the passes (gc.freeze) until it ends. Nested uses keep the outer one.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THRESHOLDS = (100_000, 50, 100)


@contextmanager
def fewer_collections() -> Iterator[None]:
    before = gc.get_threshold()
    if before[0] >= THRESHOLDS[0]:
        yield  # already in force (an outer walk, or the CLI's process-wide setting)
        return
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def for_the_process() -> None:
    """The CLI's setting for a whole command: what start-up imported is never traversed again."""
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)


@contextmanager
def no_collections() -> Iterator[None]:
    """No cycle collection at all while a short, bounded piece of work runs (one eval chunk: a few
    scenarios made and walked, a few MB of objects), then one pass over what it left; the collector's
    passes were a twelfth of an eval worker's time even at THRESHOLDS (docs/speed.md)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)
