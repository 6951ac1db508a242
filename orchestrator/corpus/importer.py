"""`corpus import`: a native agent log in, a corpus case folder out."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from orchestrator.infra.errors import UserError
from orchestrator.record.case_file import write_case
from orchestrator.record.layout import CaseFiles
from spiral.adapters import FORMATS, make_adapter
from spiral.envelope import make_envelope, parse_envelope
from spiral.settings import BUCKET_NAMES
from spiral.timestamps import format_ts, parse_ts

_DEFAULT_START = "2026-01-01T00:00:00Z"


def _lines(path: Path) -> Iterator[bytes]:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            yield from fh
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except (OSError, EOFError) as exc:
        raise UserError(f"{path}: cannot read: {exc}") from None


def _record_ts(obj: Any) -> float | None:
    if isinstance(obj, dict):
        return parse_ts(obj.get("timestamp"))
    return None


def _record_cwd(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    cwd = obj.get("cwd")
    if isinstance(cwd, str):
        return cwd
    payload = obj.get("payload")
    cwd = payload.get("cwd") if isinstance(payload, dict) else None
    return cwd if isinstance(cwd, str) else None


def read_records(file: Path) -> tuple[list[Any], int, int]:
    """(parsed JSON lines, non-blank lines, unparseable lines) of a native log, .gz or not."""
    records: list[Any] = []
    skipped = lines = 0
    for raw in _lines(file):
        if not raw.strip():
            continue
        lines += 1
        try:
            records.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            skipped += 1
    return records, lines, skipped


def timestamp_records(records: list[Any], spacing: float) -> tuple[list[tuple[float, Any]], str | None]:
    """Each record with a time: its own `timestamp`, else `spacing` after the previous one.

    Records before the first timestamped one take its time, and the clock never
    runs backwards. Also returns the working directory the log names, if any.
    """
    start = next((t for t in map(_record_ts, records) if t is not None), parse_ts(_DEFAULT_START))
    out: list[tuple[float, Any]] = []
    workdir: str | None = None
    prev: float | None = None
    for obj in records:
        ts = _record_ts(obj)
        if ts is None:
            ts = (prev + spacing) if prev is not None else start
        assert ts is not None
        if prev is not None and ts < prev:
            ts = prev
        prev = ts
        workdir = workdir or _record_cwd(obj)
        out.append((ts, obj))
    return out, workdir


def import_log(
    file: Path, *, fmt: str, bucket: str, out: Path, case_id: str | None, spiral: bool, spacing: float
) -> dict[str, Any]:
    if fmt not in FORMATS:
        raise UserError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if bucket not in BUCKET_NAMES:
        raise UserError(f"--bucket must be one of {', '.join(BUCKET_NAMES)}, got {bucket!r}")
    cid = case_id or re.sub(r"[^a-z0-9-]+", "-", out.name.lower()).strip("-")
    if not re.match(r"^[a-z0-9][a-z0-9-]*$", cid or ""):
        raise UserError(f"cannot make a case id from {out.name!r}; pass --id")
    if out.exists():
        raise UserError(f"{out}: already exists; choose a new folder")
    records, lines, skipped = read_records(file)
    timed, workdir = timestamp_records(records, spacing)
    if not timed:
        raise UserError(f"{file}: no readable JSON lines")
    first, prev = timed[0][0], timed[-1][0]
    envelopes = [make_envelope(format_ts(ts), obj) for ts, obj in timed]
    adapter = make_adapter(fmt, workdir)
    calls = 0
    for env in envelopes:
        parsed = parse_envelope(env)
        if parsed is not None:
            calls += len(adapter.feed(*parsed))
    out.mkdir(parents=True)
    CaseFiles(out).events.write_bytes(b"".join(envelopes))
    case = {
        "id": cid,
        "description": f"Imported from {file.name} ({calls} tool calls). Label: "
        f"{'spiral' if spiral else 'healthy'} (set by the importer's --spiral/--healthy).",
        "format": fmt,
        "bucket": bucket,
        "started_at": format_ts(first),
        "ended_at": format_ts(prev + 60),
        "outputs": [],
        "expect": {"spiral": spiral},
    }
    if workdir:
        case["workdir"] = workdir
    write_case(out, case)
    return {"lines": lines, "tool_calls": calls, "skipped": skipped + adapter.skipped, "minutes": (prev - first) / 60}
