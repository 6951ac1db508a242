"""Per-run cached detector state, so a tick reads only what the log gained.

The cache (detector.pickle in the run folder) holds the detector, the log
adapter and byte offsets into events.jsonl and workspace.jsonl. It is a
cache: when missing, unreadable or from another version, it is rebuilt from
the run's files, which stay the source of truth.
"""

from __future__ import annotations

import pickle
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.corpus.recorded import parse_snapshot_line
from orchestrator.infra.atomic import write_bytes_atomic
from orchestrator.infra.lines import whole_lines
from orchestrator.ledger.agent_records import RunSpend
from orchestrator.record.layout import CaseFiles
from spiral.adapters import Adapter, make_adapter
from spiral.detector import Detector
from spiral.envelope import parse_envelope
from spiral.model import ToolCall

CACHE_VERSION = 5
RECENT = 5  # tool calls kept for the page's "last tool calls"


@dataclass
class Cached:
    version: int
    detector: Detector
    adapter: Adapter
    events_offset: int = 0
    workspace_offset: int = 0
    skipped_lines: int = 0
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=RECENT))
    spend: RunSpend | None = None


def load(path: Path) -> Cached | None:
    try:
        with path.open("rb") as fh:
            obj = pickle.load(fh)
    except (OSError, pickle.PickleError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None
    return obj if isinstance(obj, Cached) and obj.version == CACHE_VERSION else None


def save(path: Path, cached: Cached) -> None:
    write_bytes_atomic(path, pickle.dumps(cached, protocol=pickle.HIGHEST_PROTOCOL))


def fresh(detector: Detector, fmt: str, workdir: str, model: str | None = None) -> Cached:
    return Cached(CACHE_VERSION, detector, make_adapter(fmt, workdir), spend=RunSpend.of(fmt, model))


def _brief(call: ToolCall) -> str:
    what = " ".join((call.command or call.path or "").split())
    return f"{call.tool} {what[:150]}".rstrip() + (" [error]" if call.is_error else "")


def catch_up(cached: Cached, files: CaseFiles) -> int:
    """Feed what the run's files gained since the last call; returns new tool calls."""
    before = cached.detector.calls
    det, adapter = cached.detector, cached.adapter
    snaps = []
    for line, end in whole_lines(files.workspace, cached.workspace_offset):
        cached.workspace_offset = end
        if not line.strip():
            continue
        snap = parse_snapshot_line(line)
        if snap is None:
            cached.skipped_lines += 1
        else:
            snaps.append(snap)
    j = 0
    for line, end in whole_lines(files.events, cached.events_offset):
        cached.events_offset = end
        if not line.strip():
            continue
        env = parse_envelope(line)
        if env is None:
            cached.skipped_lines += 1
            continue
        if cached.spend is not None:
            cached.spend.feed(env[1])
        while j < len(snaps) and snaps[j].ts < env[0]:
            det.add_snapshot(snaps[j])
            j += 1
        calls = adapter.feed(*env)
        if calls:
            det.add_calls(calls)
            cached.recent.extend(_brief(c) for c in calls)
    for snap in snaps[j:]:
        det.add_snapshot(snap)
    return det.calls - before
