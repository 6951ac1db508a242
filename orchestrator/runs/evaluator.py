"""Per-run cached detector state, so a tick reads only what the log gained.

The cache (detector.pickle in the run folder) holds the detector, the log
adapter and byte offsets into events.jsonl and workspace.jsonl. It is a
cache: when missing, unreadable or from another version, it is rebuilt from
the run's files, which stay the source of truth.

The detector sees the run on the *agent's* clock: time the agent spent
waiting on its model API (a provider episode, spiral/outcome.py) is cut out,
so an outage is never a mutation stall. And a call reaches the detector only
once its result is in (or after HOLD_S without one), so a call the agent's
permission layer denied is not evidence that anything ran.
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
from orchestrator.notify.pages import redact
from orchestrator.record.layout import CaseFiles
from spiral.adapters import Adapter, make_adapter
from spiral.detector import Detector
from spiral.envelope import parse_envelope
from spiral.model import Snapshot, ToolCall
from spiral.outcome import Outcome, blocked_before

CACHE_VERSION = 8  # 6: the last tool calls are redacted before they are cut; 7: the detector has rules and scope; 8: findings name their target, drift and revert state
RECENT = 5  # tool calls kept for the page's "last tool calls"
HOLD_S = 60.0  # run-clock seconds a call waits for its result before it counts anyway


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
    outcome: Outcome = field(default_factory=Outcome)
    # calls (and the snapshots after them) read but not yet given to the detector, in time order
    pending: list[ToolCall | Snapshot] = field(default_factory=list)
    denied_calls: int = 0
    last_ts: float = 0.0

    def agent_time(self, ts: float) -> float:
        """`ts` on the agent's clock: run time less the time blocked on the provider before it."""
        if not self.outcome.episodes:
            return ts
        return ts - blocked_before(self.outcome.blocked_intervals(ts), ts)


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
    """One of the page's "last tool calls": redacted whole, then cut (a cut secret escapes the patterns).

    The first 8192 characters are redacted (a secret that starts in the shown 150 is whole in them,
    and the cost stays bounded), then 150 are kept.
    """
    what = " ".join(redact((call.command or call.path or "")[:8192]).split())
    if len(what) > 150:
        what = what[:147] + "..."
    return f"{call.tool} {what}".rstrip() + (" [error]" if call.is_error else "")


def catch_up(cached: Cached, files: CaseFiles) -> int:
    """Feed what the run's files gained since the last call; returns new tool calls."""
    before = cached.detector.calls
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
    calls: list[ToolCall] = []
    for line, end in whole_lines(files.events, cached.events_offset):
        cached.events_offset = end
        if not line.strip():
            continue
        env = parse_envelope(line)
        if env is None:
            cached.skipped_lines += 1
            continue
        ts, data = env
        cached.last_ts = max(cached.last_ts, ts)
        if cached.spend is not None:
            cached.spend.feed(data)
        cached.outcome.feed(ts, data)
        calls.extend(cached.adapter.feed(ts, data))
    _merge(cached, calls, snaps)
    _release(cached, final=False)
    return cached.detector.calls - before


def _merge(cached: Cached, calls: list[ToolCall], snaps: list[Snapshot]) -> None:
    """New calls and snapshots into the pending queue, in time order (a snapshot after calls of its time)."""
    merged: list[ToolCall | Snapshot] = []
    i = j = 0
    while i < len(calls) or j < len(snaps):
        if j >= len(snaps) or (i < len(calls) and calls[i].ts <= snaps[j].ts):
            merged.append(calls[i])
            i += 1
        else:
            merged.append(snaps[j])
            j += 1
    cached.pending.extend(merged)


def _release(cached: Cached, *, final: bool) -> None:
    """Give the detector what is decided: everything up to the first call still waiting for its result."""
    det, out = cached.detector, 0
    for item in cached.pending:
        if isinstance(item, Snapshot):
            item.ts = cached.agent_time(item.ts)
            det.add_snapshot(item)
        else:
            if not item.result_seen and not final and cached.last_ts - item.ts < HOLD_S:
                break
            if item.denied:
                cached.denied_calls += 1
            else:
                cached.recent.append(_brief(item))
                item.ts = cached.agent_time(item.ts)
                det.add_call(item)
        out += 1
    del cached.pending[:out]


def flush(cached: Cached) -> None:
    """The run ended: whatever is still pending counts now."""
    _release(cached, final=True)
