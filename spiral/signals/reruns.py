"""Why a repeated script, test or file counted: the outcomes behind the count (pure)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable

from spiral.call_windows import SAME_FAILURE, SAME_READ, UNCHANGED, Run
from spiral.signals._count import short
from spiral.verdict import Finding


def explained(finding: Finding, runs: Iterable[Run], changes: Iterable[tuple[int, str]]) -> Finding:
    """The finding with the outcomes behind its count appended to its evidence."""
    why = explain(runs, finding.target, changes) if finding.target is not None else ""
    return Finding(finding.signal, finding.weight, finding.evidence + why, finding.target) if why else finding


def explain(runs: Iterable[Run], target: str, changes: Iterable[tuple[int, str]]) -> str:
    """`; it failed identically 9 times, 7 of them after edits to store.py; 2 reruns on an unchanged tree`."""
    mine = [r for r in runs if r.target == target]
    same = [r for r in mine if r.kind == SAME_FAILURE]
    after = [r for r in same if r.at > r.since]
    parts = []
    if same:
        text = f"it failed identically {len(same) + 1} times"
        if after:
            edited = _edited(after, changes, target)
            text += f", {len(after)} of them after edits" + (f" to {edited}" if edited else "")
        parts.append(text)
    unchanged = sum(r.kind == UNCHANGED for r in mine)
    if unchanged:
        parts.append(f"{unchanged} reruns on an unchanged tree")
    reads = sum(r.kind == SAME_READ for r in mine)
    if reads:
        parts.append(f"{reads} reads returned the same content again")
    in_sub = sum(r.agent is not None for r in mine)
    if in_sub:
        parts.append(f"{in_sub} of these calls made by subagents")
    return "; " + "; ".join(parts) if parts else ""


def _edited(runs: list[Run], changes: Iterable[tuple[int, str]], target: str) -> str:
    """The files changed between the runs (the target itself too: a script edited and rerun)."""
    merged: list[list[int]] = []  # the spans (since, at], joined where they touch: disjoint and in order
    for lo, hi in sorted((r.since, r.at) for r in runs):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    starts = [lo for lo, _ in merged]
    seen: dict[str, None] = {}
    for version, path in changes:
        i = bisect_left(starts, version) - 1  # the last span starting before this version
        if i >= 0 and version <= merged[i][1]:
            seen[path] = None
    names = list(seen)
    return ", ".join(short(p, 40) for p in names[:3]) + (", ..." if len(names) > 3 else "")
