"""A recorded run's files, read: envelopes (events.jsonl), clone snapshots (workspace.jsonl), tracked.txt.

Torn or garbage lines are skipped and counted, never fatal.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from orchestrator.infra.lines import lines_upto, open_at
from spiral.envelope import LineCounter as LineCounter  # (re-exported: the readers here count with it)
from spiral.envelope import envelopes
from spiral.model import Snapshot
from spiral.porcelain import parse_porcelain
from spiral.timestamps import parse_ts


def read_events(path: Path, counter: LineCounter) -> Iterator[tuple[float, Any]]:
    """(ts, native payload) per readable envelope line; bad lines are counted."""
    with events_in(path, counter) as events:
        yield from events


@contextmanager
def events_in(path: Path, counter: LineCounter) -> Iterator[Iterator[tuple[float, Any]]]:
    """`read_events` for a long walk: the compiled envelope reader itself, the file open while the block
    runs (no interpreted generator around it: one resumption a line cost 4% of a replay)."""
    with open_at(path) as fh:
        yield envelopes(fh, counter)


def read_snapshots(path: Path, counter: LineCounter) -> Iterator[Snapshot]:
    memo: dict[str, dict[str, str]] = {}
    with open_at(path) as fh:
        for line in fh:
            if not line.strip():
                continue
            snap = parse_snapshot_line(line, memo)
            if snap is None:
                counter.skipped += 1
                continue
            yield snap


def snapshots_upto(
    path: Path, offset: int, until: int, limit: int
) -> tuple[list[tuple[Snapshot | None, int]], int, bool]:
    """The snapshots of at most `limit` whole lines after byte `offset` that end at or before `until`,
    each with the offset after its line (None: a garbage line, to be counted); the offset after the
    last line read (blank lines are passed over); and whether more lines may follow (`limit` read).
    One call a batch: a pass takes a run's new snapshots in one go, not a line at a time."""
    out: list[tuple[Snapshot | None, int]] = []
    lines = lines_upto(path, offset, until, limit)
    for line, end in lines:
        if line.strip():
            out.append((parse_snapshot_line(line), end))
    return out, lines[-1][1] if lines else offset, len(lines) >= limit


def distinct_snapshots(snaps: Iterable[Snapshot]) -> Iterator[Snapshot]:
    """Snapshots that differ from the one before: an unchanged clone tells the detector nothing.

    Lazy: a recording of a million calls need not hold its snapshots in memory.
    """
    last: Snapshot | None = None
    for snap in snaps:
        if last is not None and snap.status == last.status and snap.hashes == last.hashes:
            continue
        last = snap
        yield snap


def parse_snapshot_line(line: bytes, memo: dict[str, dict[str, str]] | None = None) -> Snapshot | None:
    """One workspace.jsonl line; `memo` reuses the parse of a repeated porcelain text."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("porcelain"), str):
        return None
    ts = parse_ts(obj.get("ts"))
    if ts is None:
        return None
    hashes = obj.get("hashes") or {}
    if not isinstance(hashes, dict):
        return None
    text = obj["porcelain"]
    status = memo.get(text) if memo is not None else None
    if status is None:
        status = parse_porcelain(text)
        if memo is not None:
            memo.clear()  # only the previous snapshot is worth remembering
            memo[text] = status
    return Snapshot(ts, status, {k: v for k, v in hashes.items() if isinstance(v, str)})


def read_tracked(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln]
