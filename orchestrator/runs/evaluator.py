"""Per-run cached detector state, so a tick reads only what the log gained.

The cache (detector.pickle in the run folder) holds the detector, the log
adapter and byte offsets into events.jsonl and workspace.jsonl. It is a
cache: when missing, unreadable or from another version, it is rebuilt from
the run's files, which stay the source of truth.

A long-lived process (the watcher) keeps each run's state in memory between
ticks (`Kept`) and reads the file again only when another process rewrote it.
The file is written when the state changed and either PERSIST_S passed since
this process last wrote or read it, or more than PERSIST_BYTES of log were read
since (a first pass is written at once), and on the watcher's way out. What is
not written is only catch-up work: the next reader redoes it from the last file.

The detector sees the run on the *agent's* clock: time the agent spent
waiting on its model API (a provider episode, spiral/outcome.py) is cut out,
so an outage is never a mutation stall. And a call reaches the detector only
once its result is in (or after HOLD_S without one), so a call the agent's
permission layer denied is not evidence that anything ran.
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from orchestrator.infra.atomic import write_bytes_atomic
from orchestrator.infra.lines import open_at as _open_at  # (a module global: a test replaces it)
from orchestrator.ledger.agent_records import RunSpend
from orchestrator.notify.pages import redact
from orchestrator.record.layout import CaseFiles
from orchestrator.record.run_files import snapshots_upto
from spiral.adapters import Adapter, make_adapter
from spiral.detector import Detector
from spiral.envelope import LineCounter, envelopes
from spiral.intake import FOLLOWERS as FOLLOWERS  # re-exported: guidance/track.py reads it
from spiral.intake import Intake, agent_time, excerpt
from spiral.model import Snapshot, ToolCall
from spiral.outcome import Outcome

# 6: the last tool calls are redacted before they are cut; 7: the detector has rules and scope; 8: findings
# name their target, drift and revert state; 9: spend per message in bounded windows (spiral/message_tally.py),
# the last calls kept raw; 10: spiral objects pickle compact and bounded (their __getstate__); 11: revert memory
# of the latest changed files, touched paths capped; 12: Codex spend per response in bounded windows; 13: the
# detector restarts its windows at guidance received, and the first calls after each are kept; 14: spiral's
# objects pickle the same compiled (setup.py: mypyc) or not (spiral/pickling.py), so either build reads the cache;
# 15: the calls held until decided, and the last ones kept, live in spiral's Intake (the pass's loop, compiled)
# 16: the Outcome records whether the final record came during a provider episode (final_in_episode)
# 17: the detector's state for issue 33's rules (the attempts of stuck_check, files made, the sustained hold,
#     touched paths with their times)
# 18: the file starts with a line naming its version (HEADER), so a reader tells a cache of another
#     version from its first bytes, without loading it (runs/warmup.py: which runs a pass must rebuild)
# 19: the windows and attempts remember the last failure's time (rules.batches: a parallel batch is one attempt);
#     the Outcome keeps the agent's last words (Codex's agent_message: runs/endings.py)
# 20: the file holds its parts apart, each with its own version (PARTS), so a change to one part costs
#     only that part's rebuild: `walk` (every version above) and `spend`
CACHE_VERSION = 20
# Each part's version. `walk` is the adapter, detector, intake and outcome: they are fed together, and
# the detector runs on the agent's clock, which the outcome's provider episodes define. `spend` is fed
# from the same lines but depends on nothing else: a new spend version re-reads only spend from the log.
# walk 20: stuck_check reads a check whose exit status is another command's by its runner's
#     summary, and bun/deno subcommands as checks: a cached walk counted those runs otherwise
WALK_VERSION = 20
SPEND_VERSION = 1
PARTS = {"walk": WALK_VERSION, "spend": SPEND_VERSION}
_PREFIX = f"orchestrator detector cache {CACHE_VERSION} ".encode()
HEADER = _PREFIX + " ".join(f"{k}={v}" for k, v in PARTS.items()).encode() + b"\n"
SNAPSHOT_BATCH = 512  # workspace.jsonl lines read in one call (a pass's are a few; a first pass's, many)
PERSIST_S = 120.0  # real seconds between two writes of one run's cache by one process (4 default ticks)
PERSIST_BYTES = 256 << 10  # log read since the last write that is worth a write at once (a reader would redo it)


@dataclass
class Cached:
    version: int
    detector: Detector
    adapter: Adapter
    events_offset: int = 0
    workspace_offset: int = 0
    skipped_lines: int = 0
    spend: RunSpend | None = None
    outcome: Outcome = field(default_factory=Outcome)
    # the calls read but not yet decided, the last ones decided (the page's "last tool calls") and
    # those after each guidance receipt (spiral/intake.py)
    intake: Intake = field(default_factory=Intake)
    fmt: str = "generic"  # the log's format and model, to make the spend part again
    model: str | None = None
    spend_behind: bool = False  # the spend part was of another version: catch_up re-reads the log for it

    def agent_time(self, ts: float) -> float:
        """`ts` on the agent's clock: run time less the time blocked on the provider before it."""
        return agent_time(self.outcome, ts)


def load(path: Path) -> Cached | None:
    """The cache in `path`, its parts of this version kept; None when the walk part cannot be (it is the
    dear one: the whole log again). A spend part of another version is left `spend_behind`."""
    try:
        with path.open("rb") as fh:
            versions = _versions(fh.readline(256))
            if versions is None or versions.get("walk") != WALK_VERSION:
                return None  # another version's (or no) header: rebuilt from the files
            parts = pickle.load(fh)
            cached = pickle.loads(parts["walk"])
            if not isinstance(cached, Cached) or cached.version != CACHE_VERSION:
                return None
            if versions.get("spend") == SPEND_VERSION and parts.get("spend") is not None:
                cached.spend = pickle.loads(parts["spend"])
            else:
                cached.spend, cached.spend_behind = None, True
    except Exception:  # unreadable in any way (torn, damaged, another version's shape): rebuilt from the files
        return None
    return cached


def _versions(header: bytes) -> dict[str, int] | None:
    """{part: version} from a cache file's first line; None: not a cache of this layout."""
    if not header.startswith(_PREFIX) or not header.endswith(b"\n"):
        return None
    try:
        return {k: int(v) for k, v in (w.split("=", 1) for w in header[len(_PREFIX) :].decode().split())}
    except ValueError:
        return None


def current(path: Path) -> bool:
    """Whether `path` is a cache with every part of this version, from its first line (not whether it loads)."""
    try:
        with path.open("rb") as fh:
            return fh.read(len(HEADER)) == HEADER
    except OSError:
        return False


def save(path: Path, cached: Cached) -> None:
    # a cache, rebuilt when unreadable: no fsync (it would cost more than the tick itself)
    walk = pickle.dumps(replace(cached, spend=None), protocol=pickle.HIGHEST_PROTOCOL)
    spend = pickle.dumps(cached.spend, protocol=pickle.HIGHEST_PROTOCOL) if cached.spend is not None else None
    body = pickle.dumps({"walk": walk, "spend": spend}, protocol=pickle.HIGHEST_PROTOCOL)
    write_bytes_atomic(path, HEADER + body, durable=False)


Stamp = tuple[int, int, int]


def _stamp(path: Path) -> Stamp | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


@dataclass
class _Entry:
    cached: Cached
    stamp: Stamp | None  # the file as this process last read or wrote it
    saved_at: float  # when the file was last as this process's state (written or read; -inf: never)
    dirty: bool = False  # changed since the file was written
    unwritten: int = 0  # bytes of log read since


class Kept:
    """Each run's cached state, kept in this process between passes (the watcher's memory)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, keep: bool = False) -> None:
        self._runs: dict[Path, _Entry] = {}
        self.clock = clock  # a bench replaces it to play the watcher's real cadence
        # whether states stay in memory between passes (the watcher); a one-pass process forgets each
        # run's state after its pass, so it holds one run's at a time
        self.keep = keep

    def reset(self, *, keep: bool = False) -> None:
        """Forget every run's state without writing it (a test starting over as `status` or `watch`)."""
        self._runs.clear()
        self.keep = keep

    def obtain(self, path: Path) -> Cached | None:
        """The state of the run whose cache file is `path`: the one in memory while the file is
        as this process left it, else the file's (another process went on from it), else None."""
        stamp = _stamp(path)
        entry = self._runs.get(path)
        if entry is not None and stamp is not None and entry.stamp == stamp:
            return entry.cached
        cached = load(path)
        if cached is None:
            self._runs.pop(path, None)
            return None
        self._runs[path] = _Entry(cached, stamp, self.clock())
        return cached

    def put(self, path: Path, cached: Cached, *, read: int = 0, changed: bool = False, dear: bool = False) -> None:
        """Note the state after a pass that read `read` bytes of log; write it when it is due. `dear`: the
        change cost more to make than a write (a price looked up: importing genai-prices takes ~0.3 s)."""
        now = self.clock()
        entry = self._runs.get(path)
        if entry is None or entry.cached is not cached:
            entry = self._runs[path] = _Entry(cached, _stamp(path), -float("inf"), dirty=True)
        entry.unwritten += read
        entry.dirty = entry.dirty or changed or read > 0 or entry.stamp is None
        if entry.dirty and (dear or now - entry.saved_at >= PERSIST_S or entry.unwritten >= PERSIST_BYTES):
            self._write(path, entry, now)

    def drop(self, path: Path, *, write: bool = True) -> None:
        """Forget a run (it ended, or went away), writing what is unwritten first."""
        entry = self._runs.pop(path, None)
        if write and entry is not None and entry.dirty and _stamp(path) == entry.stamp:
            self._write(path, entry, self.clock())

    def discard(self, path: Path) -> None:
        """Forget a run's state without writing it (a pass over it failed half way)."""
        self._runs.pop(path, None)

    def flush(self) -> None:
        """Write every state changed since its last write (the process is about to exit); not over a
        file another process wrote since (its state is as far or further: this one's work is not needed)."""
        for path, entry in list(self._runs.items()):
            if entry.dirty and _stamp(path) == entry.stamp:
                self._write(path, entry, self.clock())

    def _write(self, path: Path, entry: _Entry, now: float) -> None:
        try:
            save(path, entry.cached)
        except OSError:
            return  # a full disk or a vanished folder: the run's files stay the truth
        entry.stamp, entry.saved_at, entry.dirty, entry.unwritten = _stamp(path), now, False, 0

    def paths(self) -> list[Path]:
        return list(self._runs)


def fresh(detector: Detector, fmt: str, workdir: str, model: str | None = None) -> Cached:
    adapter = make_adapter(fmt, workdir)
    return Cached(CACHE_VERSION, detector, adapter, spend=RunSpend.of(fmt, model), fmt=fmt, model=model)


def _brief_of(tool: str, text: str, is_error: bool) -> str:
    """One of the page's "last tool calls": redacted whole, then cut (a cut secret escapes the patterns).

    The first 8192 characters are redacted (a secret that starts in the shown 150 is whole in them,
    and the cost stays bounded), then 150 are kept.
    """
    what = " ".join(redact(text).split())
    if len(what) > 150:
        what = what[:147] + "..."
    return f"{tool} {what}".rstrip() + (" [error]" if is_error else "")


def _brief(call: ToolCall) -> str:
    return _brief_of(*excerpt(call))


def briefs(cached: Cached) -> list[str]:
    """The page's "last tool calls", made when a page needs them (not for every call: redaction is dear)."""
    return [_brief_of(*r) for r in cached.intake.recent]


def catch_up(cached: Cached, files: CaseFiles) -> int:
    """Feed what the run's files gained since the last call; returns new tool calls.

    Streams: calls and snapshots go to the detector as they are read, merged in time order
    (a snapshot after the calls of its time: spiral/intake.py), so a first pass over a long run
    holds only what is still undecided, never the whole log.
    """
    before = cached.detector.calls
    if cached.spend_behind:
        _respend(cached, files)
    # snapshots only up to where workspace.jsonl ended before the events are read: one written while
    # they are read waits for the next pass, so it never goes ahead of a call logged before it
    try:
        ws_end = files.workspace.stat().st_size
    except OSError:
        ws_end = 0
    snaps = _snapshots(cached, files, ws_end)
    spend = cached.spend.counter.feeder() if cached.spend is not None else None
    read = LineCounter(cached.events_offset)
    try:
        with _open_at(files.events, read.offset) as fh:
            events = envelopes(fh, read, live=True)
            cached.intake.take(events, snaps, cached.adapter, cached.outcome, cached.detector, spend)
    finally:
        cached.events_offset, cached.skipped_lines = read.offset, cached.skipped_lines + read.skipped
        snaps.close()
    return cached.detector.calls - before


def _respend(cached: Cached, files: CaseFiles) -> None:
    """A new spend part, fed the log up to where the walk part has read it (the spend part's version changed)."""
    cached.spend = RunSpend.of(cached.fmt, cached.model)
    feed = cached.spend.counter.feeder()
    read = LineCounter(0)
    with _open_at(files.events, 0) as fh:
        for _, data in envelopes(_upto(fh, cached.events_offset), read, live=True):
            feed(data)
    cached.spend_behind = False


def _upto(lines: Iterable[bytes], end: int) -> Generator[bytes, None, None]:
    """The whole lines of `lines` that end at or before byte `end`."""
    at = 0
    for line in lines:
        at += len(line)
        if at > end:
            return
        yield line


def _snapshots(cached: Cached, files: CaseFiles, until: int) -> Generator[Snapshot, None, None]:
    """The snapshots workspace.jsonl gained up to byte `until`, read a batch at a time (its offset
    moves as they are taken)."""
    more = True
    while more:
        batch, end, more = snapshots_upto(files.workspace, cached.workspace_offset, until, SNAPSHOT_BATCH)
        for snap, at in batch:
            cached.workspace_offset = at
            if snap is None:
                cached.skipped_lines += 1
            else:
                yield snap
        cached.workspace_offset = end


def restart_at(cached: Cached, key: float, agent_at: float) -> None:
    """Guidance reached the agent (at run time `key`; `agent_at` on the agent's clock): the detector's
    windows start again there, and the calls after it are kept for the receipt."""
    cached.intake.restart_at(cached.detector, key, agent_at)


def followers(cached: Cached, at: float) -> list[str] | None:
    """The first calls after the receipt `at` (its key), as the page shows calls (None: not restarted there)."""
    first = cached.intake.followers_of(at)
    return None if first is None else [_brief_of(*f) for f in first]


def flush(cached: Cached) -> None:
    """The run ended: whatever is still pending counts now."""
    cached.intake.release(cached.detector, cached.outcome, True)
