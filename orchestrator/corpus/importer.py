"""`corpus import`: a native agent log in, a corpus case folder out."""

from __future__ import annotations

import gzip
import heapq
import re
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from orchestrator.corpus.case import SCOPE_GLOB
from orchestrator.infra.errors import UserError
from orchestrator.infra.redaction import redact
from orchestrator.record.case_file import with_scope, write_case
from orchestrator.record.layout import CaseFiles
from spiral.adapters import FORMATS, make_adapter
from spiral.envelope import make_envelope, parse_envelope
from spiral.settings import BUCKET_NAMES
from spiral.timestamps import format_ts, parse_ts

_DEFAULT_START = "2026-01-01T00:00:00Z"


class _Torn:
    """How many logs ended torn (a .gz cut short): what was read before the cut is kept."""

    def __init__(self) -> None:
        self.ends = 0


def _lines(path: Path, torn: _Torn | None = None) -> Iterator[bytes]:
    """The log's lines, a leading byte-order mark dropped; a .gz cut short after some lines ends there."""
    opener = gzip.open if path.suffix == ".gz" else open
    first = True
    try:
        with opener(path, "rb") as fh:
            for line in fh:
                yield line.removeprefix(b"\xef\xbb\xbf") if first else line
                first = False
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except EOFError as exc:  # "Compressed file ended before the end-of-stream marker was reached"
        if first or torn is None:
            raise UserError(f"{path}: cannot read: {exc}") from None
        torn.ends += 1
    except (OSError, zlib.error) as exc:  # zlib.error: a .gz whose bytes were damaged
        raise UserError(f"{path}: cannot read: {exc}") from None


_LAST_PLAUSIBLE = (
    32503680000.0  # 3000-01-01T00:00:00Z: far enough from year 9999 (the last an ISO time says) to add spacing
)


def _record_ts(obj: Any) -> float | None:
    """A record's own time; a garbled one (before 1970, from year 3000 on) counts as none."""
    ts = parse_ts(obj.get("timestamp")) if isinstance(obj, dict) else None
    return ts if ts is not None and 0.0 <= ts < _LAST_PLAUSIBLE else None


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
    torn = _Torn()
    for raw in _lines(file, torn):
        if not raw.strip():
            continue
        lines += 1
        try:
            records.append(orjson.loads(raw))
        except orjson.JSONDecodeError:
            skipped += 1
    return records, lines, skipped + torn.ends


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


def subagents_folder(transcript: Path) -> Path:
    """Where Claude Code keeps a session's subagent transcripts: `<stem>/subagents/` beside `<stem>.jsonl`."""
    return transcript.parent / transcript.name.removesuffix(".gz").removesuffix(".jsonl") / "subagents"


def subagent_files(transcript: Path) -> list[Path]:
    """The session's subagent transcripts (`agent-*.jsonl`, or gzipped), in name order."""
    folder = subagents_folder(transcript)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("agent-*") if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz")))


def _merge_subagents(
    timed: list[tuple[float, Any]], files: list[Path], spacing: float
) -> tuple[list[tuple[float, Any]], int, int]:
    """The session's lines and its subagents' merged in time order (the session's first at a tie).

    Returns (merged, subagent lines, unparseable subagent lines).
    """
    streams, lines, skipped = [timed], 0, 0
    for path in files:
        records, n, bad = read_records(path)
        lines, skipped = lines + n, skipped + bad
        streams.append(timestamp_records(records, spacing)[0])
    tagged = ([(ts, i, j, obj) for j, (ts, obj) in enumerate(stream)] for i, stream in enumerate(streams))
    return [(ts, obj) for ts, _, _, obj in heapq.merge(*tagged, key=lambda t: t[:3])], lines, skipped


def _envelopes(timed: list[tuple[float, Any]]) -> tuple[list[bytes], int, int]:
    """The case's events.jsonl lines, secrets redacted (a case is made to be shared); also the records
    nested too deep to write again (skipped) and how many strings had a secret in them."""
    out: list[bytes] = []
    too_deep = 0
    counter = [0]
    for ts, obj in timed:
        try:
            out.append(make_envelope(format_ts(ts), _redacted(obj, counter)))
        except (TypeError, RecursionError):
            too_deep += 1
    return out, too_deep, counter[0]


# identifiers the adapters pair calls with results by (tool_use_id, call_id, toolUseID...) and opaque
# blobs: a pattern that took one for a key would merge calls or damage nothing worth hiding
_ID_KEY = re.compile(r"(?:^|_)(?:id|uuid)$|(?:Id|ID|Uuid)$|^(?:signature|encrypted_content)$", re.I)


def _redacted(obj: Any, counter: list[int]) -> Any:
    if isinstance(obj, str):
        clean = redact(obj)
        if clean != obj:
            counter[0] += 1
        return clean
    if isinstance(obj, dict):
        return {k: v if isinstance(k, str) and _ID_KEY.search(k) else _redacted(v, counter) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_redacted(v, counter) for v in obj]
    return obj


def import_log(
    file: Path,
    *,
    fmt: str,
    bucket: str,
    out: Path,
    case_id: str | None,
    spiral: bool,
    spacing: float,
    scope: tuple[str, ...] | list[str] = (),
) -> dict[str, Any]:
    """`file` as a new case folder `out`; a Claude transcript's `<stem>/subagents/` are merged into it.

    `scope`: the ticket's scope globs, written to case.yaml when any (docs/corpus-format-extensions.md).
    """
    if fmt not in FORMATS:
        raise UserError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if bucket not in BUCKET_NAMES:
        raise UserError(f"--bucket must be one of {', '.join(BUCKET_NAMES)}, got {bucket!r}")
    if not 0 <= spacing <= 86400:  # NaN fails this too
        raise UserError(f"--spacing must be a number of seconds from 0 to 86400, got {spacing}")
    cid = case_id or re.sub(r"[^a-z0-9-]+", "-", out.name.lower()).strip("-")
    if not re.match(r"^[a-z0-9][a-z0-9-]*$", cid or ""):
        if case_id is not None:
            raise UserError(f"--id must match [a-z0-9][a-z0-9-]*, got {case_id!r}")
        raise UserError(f"cannot make a case id from {out.name!r}; pass --id")
    if out.exists():
        raise UserError(f"{out}: already exists; choose a new folder")
    bad = next((g for g in scope if not re.search(SCOPE_GLOB, g)), None)
    if bad is not None:
        raise UserError(f"scope {bad!r} must be a glob relative to the clone (no leading '/', no '..')")
    records, lines, skipped = read_records(file)
    timed, workdir = timestamp_records(records, spacing)
    if not timed:
        raise UserError(f"{file}: no readable JSON lines")
    subagents = subagent_files(file) if fmt == "claude-transcript" else []
    timed, sub_lines, sub_skipped = _merge_subagents(timed, subagents, spacing)
    first, prev = timed[0][0], timed[-1][0]
    envelopes, too_deep, redacted = _envelopes(timed)
    adapter = make_adapter(fmt, workdir)
    calls = 0
    for env in envelopes:
        parsed = parse_envelope(env)
        if parsed is not None:
            calls += len(adapter.feed(*parsed))
    merged = f"; merged {sub_lines} lines of {len(subagents)} subagent transcript(s)" if subagents else ""
    out.mkdir(parents=True)
    CaseFiles(out).events.write_bytes(b"".join(envelopes))
    case = {
        "id": cid,
        "description": f"Imported from {file.name} ({calls} tool calls{merged}). Label: "
        f"{'spiral' if spiral else 'healthy'} (set by the importer's --spiral/--healthy).",
        "format": fmt,
        "bucket": bucket,
        "started_at": format_ts(first),
        "ended_at": format_ts(prev + 60),
        "outputs": [],
        **with_scope(tuple(scope)),
        "expect": {"spiral": spiral},
    }
    if workdir:
        case["workdir"] = workdir
    write_case(out, case)
    if subagents:
        where = subagents_folder(file)
        sys.stderr.write(f"merged {len(subagents)} subagent file(s), {sub_lines} lines, from {where}\n")
    return {
        "lines": lines + sub_lines,
        "tool_calls": calls,
        "skipped": skipped + sub_skipped + adapter.skipped + too_deep,
        "redacted": redacted,
        "minutes": (prev - first) / 60,
        "subagent_files": len(subagents),
        "subagent_lines": sub_lines,
    }
