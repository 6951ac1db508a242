"""One line of events.jsonl: `{"ts": "<ISO-8601>", "data": <native>}` (pure)."""

from __future__ import annotations

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


def make_envelope(ts_iso: str, data: Any) -> bytes:
    """The line the orchestrator writes for one native output line (with newline)."""
    return orjson.dumps({"ts": ts_iso, "data": data}) + b"\n"
