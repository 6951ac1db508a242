"""The sustained-loop rule (rules.sustained): loop evidence held long enough pages before the soft
band (pure: a function over a Detector's hold state; docs/detection.md, "Timing beyond the contract")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from spiral.signals import mutation_stall
from spiral.verdict import Finding

if TYPE_CHECKING:
    from spiral.detector import Detector


def held(det: Detector, now: float, findings: tuple[Finding, ...]) -> str | None:
    """Whether loop evidence (every signal but mutation_stall, a timer of its own) has held at the
    rule's threshold for `min_minutes` and `min_calls`, at `min_calls_per_min`: the page then need not
    wait for the soft band. A finding that names where its evidence began (`since`: stuck_check's first
    attempt of the stuck check) holds from there: the loop has lasted since, not since it was
    counted. A stuck check that has made `min_attempts` tries holds however few calls that took (a
    dense loop: refused edits in a row)."""
    r = det.rules
    loop = sum(f.weight for f in findings if f.signal != mutation_stall.NAME)
    if loop < r.sustained_threshold or not findings:
        det._held_since = None
        return None
    if det._held_since is None or now < det._held_since:
        det._held_since, det._held_calls = now, det.calls
    since, before = det._held_since, det._held_calls
    tries = 0
    for f in findings:  # a finding strong enough alone holds since the first call its evidence counts
        if f.weight >= r.sustained_threshold:
            tries = max(tries, f.attempts)
            if f.since is not None and f.since[0] < since:
                since, before = f.since
    held_min = (now - since) / 60.0
    held_calls = det.calls - before
    # a stuck check at its `min_attempts`th try has held as long as a loop needs to (the labelling
    # rule's sixth attempt), however few other calls came between its tries
    by_tries = r.sustained_min_attempts > 0 and tries >= r.sustained_min_attempts
    enough = held_calls >= r.sustained_min_calls or by_tries
    if held_min < r.sustained_min_minutes or not enough:
        return None
    if held_calls < r.sustained_min_pace * held_min:
        return None  # a slow loop (long test runs): the soft band is soon enough
    if held_calls < r.sustained_min_calls:
        return f"loop evidence held for {held_min:.0f} min over {tries} tries of one check (sustained-loop rule)"
    return f"loop evidence held for {held_min:.0f} min over {held_calls} tool calls (sustained-loop rule)"
