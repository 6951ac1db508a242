"""`corpus import`: a native agent log in, a corpus case folder out."""

from __future__ import annotations

import gzip
import heapq
import re
import shutil
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from orchestrator.infra.errors import UserError
from orchestrator.infra.redaction import redact, secret_name
from orchestrator.record.case import SCOPE_GLOB
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


class _Count:
    """What a stream of a log's records met: non-blank lines, and those skipped (torn, not JSON)."""

    def __init__(self) -> None:
        self.lines = self.skipped = 0


def _records(file: Path, count: _Count) -> Iterator[Any]:
    """The parsed JSON lines of a native log, .gz or not, one at a time (never the whole file in memory)."""
    torn = _Torn()
    for raw in _lines(file, torn):
        if not raw.strip():
            continue
        count.lines += 1
        try:
            yield orjson.loads(raw)
        except orjson.JSONDecodeError:
            count.skipped += 1
    count.skipped += torn.ends


def _opening(file: Path) -> tuple[float | None, str | None, bool]:
    """(the first record's own time, the first working directory named, any readable record at all):
    read only as far as it takes to find both (an early line, in every real log seen)."""
    start: float | None = None
    workdir: str | None = None
    seen = False
    for obj in _records(file, _Count()):
        seen = True
        start = start if start is not None else _record_ts(obj)
        workdir = workdir or _record_cwd(obj)
        if start is not None and workdir is not None:
            break
    return start, workdir, seen


def _timed(records: Iterable[Any], start: float | None, spacing: float) -> Iterator[tuple[float, Any]]:
    """Each record with a time: its own `timestamp`, else `spacing` after the previous one. Records
    before the first timestamped one take its time (`start`), and the clock never runs backwards."""
    first = start if start is not None else parse_ts(_DEFAULT_START)
    assert first is not None
    prev: float | None = None
    for obj in records:
        ts = _record_ts(obj)
        if ts is None:
            ts = (prev + spacing) if prev is not None else first
        if prev is not None and ts < prev:
            ts = prev
        prev = ts
        yield ts, obj


def read_records(file: Path) -> tuple[list[Any], int, int]:
    """(parsed JSON lines, non-blank lines, unparseable lines) of a native log, .gz or not."""
    count = _Count()
    records = list(_records(file, count))
    return records, count.lines, count.skipped


def timestamp_records(records: list[Any], spacing: float) -> tuple[list[tuple[float, Any]], str | None]:
    """Each record with a time (see _timed), and the working directory the log names, if any."""
    start = next((t for t in map(_record_ts, records) if t is not None), None)
    workdir = next((w for w in map(_record_cwd, records) if w is not None), None)
    return list(_timed(records, start, spacing)), workdir


def subagents_folder(transcript: Path) -> Path:
    """Where Claude Code keeps a session's subagent transcripts: `<stem>/subagents/` beside `<stem>.jsonl`."""
    return transcript.parent / transcript.name.removesuffix(".gz").removesuffix(".jsonl") / "subagents"


def subagent_files(transcript: Path) -> list[Path]:
    """The session's subagent transcripts (`agent-*.jsonl`, or gzipped), in name order."""
    folder = subagents_folder(transcript)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("agent-*") if p.is_file() and p.name.endswith((".jsonl", ".jsonl.gz")))


def _merged(
    main: Iterator[tuple[float, Any]], files: list[Path], spacing: float, count: _Count
) -> Iterator[tuple[float, Any]]:
    """The session's records and its subagents' merged in time order (the session's first at a tie),
    each file streamed; `count` adds up the subagent files' lines."""
    streams = [main]
    for path in files:  # read whole (a subagent's file is small; a session may have a thousand: never all open)
        start, _, _ = _opening(path)
        streams.append(iter(list(_timed(_records(path, count), start, spacing))))
    tagged = (((ts, i, j, obj) for j, (ts, obj) in enumerate(stream)) for i, stream in enumerate(streams))
    return ((ts, obj) for ts, _, _, obj in heapq.merge(*tagged, key=lambda t: t[:3]))


class _Written:
    """What writing the case's events.jsonl met: its first and last times, the tool calls the adapter
    read back from it, records nested too deep to write again, strings that held a secret."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last = 0.0
        self.calls = self.too_deep = self.redacted = 0


def _write_events(timed: Iterable[tuple[float, Any]], dest: BinaryIO, adapter: Any) -> _Written:
    """The case's events.jsonl, one envelope at a time, secrets redacted (a case is made to be shared);
    each line is read back as replay will read it, to count the calls."""
    done = _Written()
    counter = [0]
    for ts, obj in timed:
        try:
            env = make_envelope(format_ts(ts), _redacted(obj, counter))
        except (TypeError, RecursionError):
            done.too_deep += 1
            continue
        dest.write(env)
        done.first = ts if done.first is None else done.first
        done.last = ts
        parsed = parse_envelope(env)
        if parsed is not None:
            done.calls += len(adapter.feed(*parsed))
    done.redacted = counter[0]
    return done


# identifiers the adapters pair calls with results by (tool_use_id, call_id, toolUseID...) and opaque
# blobs: a pattern that took one for a key would merge calls or damage nothing worth hiding
_ID_KEY = re.compile(r"(?:^|_)(?:id|uuid)$|(?:Id|ID|Uuid)$|^(?:signature|encrypted_content)$", re.I)


def _entry(key: Any, value: Any, counter: list[int]) -> Any:
    if isinstance(key, str) and _ID_KEY.search(key):
        return value
    if isinstance(key, str) and isinstance(value, str) and len(value) >= 4 and secret_name(key):
        counter[0] += 1  # {"password": "..."}: the value is a secret by its key alone
        return "[REDACTED]"
    return _redacted(value, counter)


def _redacted(obj: Any, counter: list[int]) -> Any:
    if isinstance(obj, str):
        clean = redact(obj)
        if clean != obj:
            counter[0] += 1
        return clean
    if isinstance(obj, dict):
        return {k: _entry(k, v, counter) for k, v in obj.items()}
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
    start, workdir, readable = _opening(file)
    if not readable:
        raise UserError(f"{file}: no readable JSON lines")
    subagents = subagent_files(file) if fmt == "claude-transcript" else []
    count, sub_count = _Count(), _Count()
    timed = _merged(_timed(_records(file, count), start, spacing), subagents, spacing, sub_count)
    adapter = make_adapter(fmt, workdir)
    out.mkdir(parents=True)
    try:
        with CaseFiles(out).events.open("wb") as dest:
            done = _write_events(timed, dest, adapter)
    except BaseException:
        shutil.rmtree(out, ignore_errors=True)  # no half-written case left behind
        raise
    first = done.first if done.first is not None else (start or parse_ts(_DEFAULT_START) or 0.0)
    prev, calls, sub_lines = done.last, done.calls, sub_count.lines
    merged = f"; merged {sub_lines} lines of {len(subagents)} subagent transcript(s)" if subagents else ""
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
        "lines": count.lines + sub_lines,
        "tool_calls": calls,
        "skipped": count.skipped + sub_count.skipped + adapter.skipped + done.too_deep,
        "redacted": done.redacted,
        "minutes": (prev - first) / 60,
        "subagent_files": len(subagents),
        "subagent_lines": sub_lines,
    }
