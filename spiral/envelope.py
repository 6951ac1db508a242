"""One line of events.jsonl: `{"ts": "<ISO-8601>", "data": <native>}` (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from spiral.timestamps import parse_ts


def parse_envelope(line: bytes | str) -> tuple[float, Any] | None:
    """(epoch seconds, native payload), or None for a torn, non-JSON or foreign line."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or "data" not in obj:
        return None
    ts = parse_ts(obj.get("ts"))
    if ts is None:
        return None
    return ts, obj["data"]


def make_envelope(ts_iso: str, data: Any, raw: bytes | None = None) -> bytes:
    """The line the orchestrator writes for one native output line (with newline).

    orjson reads JSON nested up to 1024 deep but writes only about 254 deep: a payload it cannot write
    is kept as the text of `raw`, the line it was read from, when given (a capture loses nothing); else
    TypeError."""
    try:
        return orjson.dumps({"ts": ts_iso, "data": data}) + b"\n"
    except TypeError:
        if raw is None:
            raise
        text = raw.rstrip(b"\r\n").decode("utf-8", errors="replace")
        return orjson.dumps({"ts": ts_iso, "data": text}) + b"\n"


class LineCounter:
    """Counts lines that were skipped as unreadable; a live read (`envelopes`) also keeps the offset it read to."""

    def __init__(self, offset: int = 0) -> None:
        self.skipped = 0
        self.offset = offset


def envelopes(lines: Iterable[bytes], counter: LineCounter, live: bool = False) -> Iterator[tuple[float, Any]]:
    """(ts, native payload) per readable envelope line of events.jsonl; torn or foreign lines are counted.

    `live`: a file still being appended to, read from byte `counter.offset` (the live evaluator's first
    pass and every tick): the offset moves past each whole line taken, readable or not, and a torn last
    line (no newline yet) ends the read, left for the next one.

    parse_envelope, inlined: the hottest loop of a replay, one orjson call a line."""
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    for line in lines:
        if live:
            if line[-1:] != b"\n":
                return  # torn: its end is not written yet
            counter.offset += len(line)
        try:
            obj = loads(line)
        except decode_error:
            if line.strip():
                counter.skipped += 1
            continue
        if type(obj) is dict and "data" in obj:
            ts = parse_ts(obj.get("ts"))
            if ts is not None:
                yield ts, obj["data"]
                continue
        counter.skipped += 1
