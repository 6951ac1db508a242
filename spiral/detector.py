"""The spiral detector: fed tool calls and snapshots as they arrive, asked for
a verdict at a moment. Pure: the caller supplies every timestamp, nothing here
reads a clock or a file, and a tick costs the same however long the run is.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable

from mypy_extensions import mypyc_attr

from spiral import model, sustained, tree_edits
from spiral.call_meaning import meaning_of
from spiral.call_windows import CallWindows, Meaning
from spiral.model import Snapshot, ToolCall
from spiral.paths import is_debris, scope_pattern, shared_set
from spiral.pickling import attrs_of, set_attrs
from spiral.settings import Settings
from spiral.signals import debris, drift, mutation_stall
from spiral.verdict import HEALTHY, SOFT, STUCK, Finding, Verdict
from spiral.window_findings import window_findings

_MEANING_CACHE = 128  # distinct calls' meanings memoised: loops repeat within dozens; one memo a live run
# revert detection remembers the earlier contents of the files changed last (editing in circles keeps
# its few files among them), the latest of each: a revert to a content forgotten is not seen
_BLOB_PATHS = 128
_DEBRIS_MEMO = 256  # paths whose debris verdict is memoised (one memo a live run: kept small)
_BLOBS_PER_PATH = 16
# paths remembered as touched / written, the latest first touched kept: past the cap the earliest is forgotten.
# A path dirty in the last snapshot is never new (a clone with more dirty files than the cap, an untracked venv
# say, does not look like growth every snapshot); one forgotten, gone from the status and touched again counts
# as new. A spiral touches no new paths, so its stall is seen as before. The cap bounds the watcher's per-tick
# state (a 1M-call run touching 38k files pickled 1.8 MB of paths; at 4096 paths a watcher held 0.9 MB a run at
# 100k calls against 0.55 at 2k); the evidence's "N touched" stops at it.
_PATHS = 1024
_OUTSIDE = 4096  # files of the current out-of-scope streak remembered (past it, one may count twice)
_DEBRIS = 4096  # debris files written, remembered while no snapshot came (past it, the count stops: >= debris_min)


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class Detector:
    def __init__(
        self,
        settings: Settings,
        *,
        bucket: str,
        started_at: float,
        tracked: Iterable[str] = (),
        outputs: Iterable[str] = (),
        workdir: str | None = None,
        scope: Iterable[str] = (),
    ) -> None:
        self.settings = settings
        self.bucket = settings.bucket(bucket)
        self.started_at = started_at
        self.workdir = workdir
        self.tracked = shared_set(frozenset(tracked))
        self.outputs = frozenset(o.strip("/") for o in outputs)
        self.rules = settings.rules
        self.windows = CallWindows(settings)
        self.calls = 0
        self.snapshots = 0
        # workspace memory
        self._status: dict[str, str] = {}
        self._hashes: dict[str, str] = {}
        self._blobs: dict[str, dict[str, None]] = {}  # path -> the contents (blob ids) it has had, in order
        self._head_moved = False  # a git command that moves HEAD or the index ran since the last snapshot
        # the touched set comes from snapshots; writes in the log stand in for it only without any snapshot
        # path -> when it was first touched, in that order (the earliest first touched is forgotten first)
        self.touched: dict[str, float] = {}
        self.touched_grew_at = started_at
        self._written: dict[str, float] = {}
        self._written_grew_at = started_at
        self.progress_at = started_at
        self._debris_in_clone: tuple[str, ...] = ()
        self._debris_written: dict[str, None] = {}
        self._debris_memo: dict[str, bool] = {}
        # files the run made (created, untracked), and of those the ones it then ran or compiled (shell_edits)
        self._made_debris: dict[str, None] = {}  # (the files made: self.windows.made, for the attempts' probes)
        self._meaning: dict[tuple[str, str | None, str | None, str | None], Meaning] = {}
        # window findings only change when a call is taken into the windows: cached per count
        self._cache_at = -1
        self._cached: tuple[Finding | None, ...] = ()
        # drift from the ticket's scope (rules.drift)
        self.scope = tuple(scope)
        self._scope = scope_pattern(self.scope) if self.rules.drift else None
        self._in_scope_at = started_at
        self._outside_streak = 0
        self._outside: deque[str] = deque(maxlen=4)
        self._outside_seen: set[str] = set()  # the files of the current streak
        # guidance the agent received (orchestrator/guidance): the windows start again at each moment,
        # so a verdict after it rests on what the agent did since. (moment, calls seen before it) once applied
        self._restart_due: list[float] = []
        self.restarts: list[tuple[float, int]] = []
        self._last_ts = started_at
        # rules.sustained: since when (and since how many calls) loop evidence has held at its threshold
        self._held_since: float | None = None
        self._held_calls = 0

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its memos (what a path or a call means, the last window findings: recomputed),
        so the live watcher's per-tick state stays small however long the run."""
        state = attrs_of(self)
        state["_meaning"], state["_debris_memo"] = {}, {}
        state["_cache_at"], state["_cached"] = -1, ()  # the window findings: worked out again on the next look
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        set_attrs(self, state)
        self.tracked = shared_set(self.tracked)

    def add_calls(self, calls: Iterable[ToolCall]) -> None:
        for call in calls:
            self.add_call(call)

    def restart(self, at: float) -> None:
        """The agent received guidance at `at`: every window starts again there (one episode ends).

        Calls and snapshots before `at` stay counted as they were; from `at` on, the signals see only
        what came after: the repetition, polling and error windows are emptied, and the quiet times
        (mutation stall, debris, drift) are measured from `at`. Taken in time order with the input:
        when input after `at` was already given, the restart happens now.
        """
        if any(at == r for r, _ in self.restarts) or at in self._restart_due:
            return
        self._restart_due.append(at)
        self._restart_due.sort()
        if self._last_ts >= at:
            self._apply_restarts(self._last_ts)

    def _apply_restarts(self, ts: float) -> None:
        while self._restart_due and self._restart_due[0] <= ts:
            at = self._restart_due.pop(0)
            self.restarts.append((at, self.calls))
            made = self.windows.made
            self.windows = CallWindows(self.settings)
            self.windows.made = made
            self._cache_at, self._cached = -1, ()
            self.touched_grew_at = max(self.touched_grew_at, at)
            self._written_grew_at = max(self._written_grew_at, at)
            self.progress_at = max(self.progress_at, at)
            self._in_scope_at = max(self._in_scope_at, at)
            self._outside_streak = 0
            self._outside.clear()
            self._outside_seen.clear()
            self._held_since = None

    def _seen(self, ts: float) -> None:
        if ts > self._last_ts:
            self._last_ts = ts
        if self._restart_due and self._restart_due[0] <= ts:
            self._apply_restarts(ts)

    def add_call(self, call: ToolCall) -> None:
        self._seen(call.ts)
        if call.agent is not None and not self.rules.subagents:
            return  # the ablation of the subagents rule: a detector that reads the main thread only
        # loops repeat the same calls: what a call means is worked out once per distinct call
        if self.workdir is None and call.tool == model.BASH and call.command and self.rules.shell_edits:
            tree_edits.learn_workdir(self, call.command)
        ident = (call.tool, call.command, call.path, call.cwd)
        meaning = self._meaning.get(ident)
        if meaning is None:
            meaning = meaning_of(call, self.settings, self.workdir, self.tracked)
            if len(self._meaning) >= _MEANING_CACHE:
                self._meaning.clear()
            self._meaning[ident] = meaning
        if meaning.writes is not None and not call.denied:
            tree_edits.shell_wrote(self, meaning, call)  # before the call is queued: its own run sees what it changed
        elif call.tool in model.WRITING_TOOLS and meaning.path and self.rules.shell_edits:
            tree_edits.wrote_file(self, meaning.path, call)
        if self.rules.made_debris and meaning.intent_script is not None and meaning.intent_script in self.windows.made:
            tree_edits.ran_made(self, meaning.intent_script)
        self.windows.add(call, meaning)
        self.calls += 1
        if meaning.moves_head:
            self._head_moved = True  # files leaving `git status` next are committed or stashed, not reverted
        file = meaning.path
        if call.tool in model.WRITING_TOOLS and file and not file.startswith("/"):
            if call.result_seen and (call.is_error or call.denied):
                return  # an edit that failed or was refused changed nothing
            self._changed(file, call.ts)
            if self.snapshots:
                return  # the writes seen stand in for the snapshots only in a recording that has none
            self._wrote(file, call.ts)

    def _wrote(self, file: str, ts: float) -> None:
        """A file the log says was written, standing in for the snapshots of a recording that has none."""
        if not self._is_debris(file):
            if file not in self._written:
                _remember(self._written, file, ts)
                self._written_grew_at = max(self._written_grew_at, ts)
        elif file not in self.tracked:
            self._note_debris(file)

    def _note_debris(self, file: str) -> None:
        """A debris file the log says was written (while no snapshot says what the clone holds)."""
        if len(self._debris_written) < _DEBRIS:
            self._debris_written[file] = None

    def add_snapshot(self, snap: Snapshot) -> None:
        self._seen(snap.ts)
        if not self.snapshots:  # from now on the snapshots say what was touched, not the writes seen
            self._written, self._debris_written = {}, {}
        self.snapshots += 1
        status, hashes = snap.status, snap.hashes
        prev_status, prev_hashes = self._status, self._hashes
        same_status, same_hashes = status == prev_status, hashes == prev_hashes
        if same_status and same_hashes:
            return  # nothing moved since the last snapshot
        outcomes = self.rules.outcomes
        grew = False
        for path, st in status.items():
            before = prev_status.get(path)  # None: not dirty in the last snapshot
            blob = None if same_hashes else hashes.get(path)
            if before == st and (blob is None or prev_hashes.get(path) == blob):
                continue  # still dirty as it was (the common case: one lookup when no hash moved)
            self._changed(path, snap.ts)
            if blob is not None and outcomes and blob != prev_hashes.get(path):
                self._note_blob(path, blob)
            # new in the status (not new if it was dirty last time, even when the cap forgot it)
            if before is None and path not in self.touched and not self._is_debris(path):
                _remember(self.touched, path, snap.ts)
                grew = True
        head_moved, self._head_moved = self._head_moved, False
        if not same_status:
            for path in [p for p in prev_status if p not in status]:  # in order: the verdict must not hang on hashing
                self._changed(path, snap.ts)  # reverted, deleted or committed
                if path in self.tracked and outcomes and not head_moved:
                    self.windows.note_revert(path)  # back at its committed content (no commit, stash, reset ran)
            self._debris_in_clone = self._debris_of(status)  # (the same statuses: the same debris)
        if grew:
            self.touched_grew_at = max(self.touched_grew_at, snap.ts)
        self._status, self._hashes = status, hashes

    def _debris_of(self, status: dict[str, str]) -> tuple[str, ...]:
        """The debris files a snapshot lists as new (untracked or added)."""
        return tuple(p for p, st in status.items() if (st == "??" or st[0] == "A") and self._is_debris(p))

    def _is_debris(self, path: str) -> bool:
        known = self._debris_memo.get(path)
        if known is None:
            known = (
                is_debris(path, self.settings.debris_basename, self.settings.debris_stem) or path in self._made_debris
            )
            if len(self._debris_memo) >= _DEBRIS_MEMO:
                self._debris_memo.clear()  # (worked out again from the name and _made_debris)
            self._debris_memo[path] = known
        return known

    def _note_blob(self, path: str, blob: str) -> None:
        """A new content of `path`: a revert when it had it before (among the contents remembered)."""
        seen = self._blobs.pop(path, None)  # put back last: the latest changed file
        if seen is None:
            seen = {}
        if blob in seen:
            self.windows.note_revert(path)  # back at a content it had before
        else:
            seen[blob] = None
            if len(seen) > _BLOBS_PER_PATH:
                del seen[next(iter(seen))]
        self._blobs[path] = seen
        if len(self._blobs) > _BLOB_PATHS:
            del self._blobs[next(iter(self._blobs))]

    def _changed(self, path: str, ts: float) -> None:
        real = not self._is_debris(path)
        self.windows.note_change(path, real)
        progress = path in self.outputs if self.outputs else real
        if progress and ts > self.progress_at:
            self.progress_at = ts
        if self._scope is not None:
            clean = path.rstrip("/")
            if clean in self.outputs or self._scope.match(clean):
                self._in_scope_at = max(self._in_scope_at, ts)
                self._outside_streak = 0
                self._outside_seen.clear()
            elif clean not in self._outside_seen:  # a file counts once per streak (the log and a snapshot both see it)
                if len(self._outside_seen) < _OUTSIDE:
                    self._outside_seen.add(clean)
                self._outside_streak += 1
                self._outside.append(clean)

    @property
    def _drifting(self) -> bool:
        """The recent edits all fell outside the ticket's scope (drift then waits for the quiet time)."""
        return self._scope is not None and self._outside_streak >= self.rules.drift_recent_edits

    @property
    def debris_files(self) -> tuple[str, ...]:
        """Debris in the clone: from the latest snapshot, else from the writes seen."""
        if self.snapshots:
            return self._debris_in_clone
        return tuple(self._debris_written)

    def evaluate(self, now: float) -> Verdict:
        s, b = self.settings, self.bucket
        elapsed_min = max(0.0, (now - self.started_at) / 60.0)
        calls = self.calls if b.expected_calls else 0  # the bands in tool calls (whichever comes first)
        if elapsed_min >= b.stuck_min or (calls and calls >= b.stuck_calls):
            region = STUCK
        elif elapsed_min >= b.soft_start_min or (calls and calls >= b.soft_start_calls):
            region = SOFT
        else:
            region = HEALTHY
        # how far into the run, in minutes of the expected time: by the clock or by the calls made
        progress_min = max(elapsed_min, calls / b.expected_calls * b.expected_min) if calls else elapsed_min
        if self._restart_due and self._restart_due[0] <= now:
            self._apply_restarts(now)
        self.windows.resolve(now)
        if self.windows.waiting():
            # a call still waits for its result: judged for now as the contract counts it, not cached
            rep, sb, poll, err, stuck = window_findings(self.settings, self.windows, self.windows.provisional())
        else:
            if self._cache_at != self.windows.pushed:
                self._cached = window_findings(self.settings, self.windows)
                self._cache_at = self.windows.pushed
            rep, sb, poll, err, stuck = self._cached
        deb = stall = drifted = None
        # the time-based signals are tested cheaply first: on most ticks neither can fire
        debris_files = self.debris_files
        quiet_min = (now - self.progress_at) / 60.0
        if len(debris_files) >= s.debris_min and quiet_min >= s.progress_quiet_min:
            deb = debris.check(
                debris_files,
                quiet_min=s.progress_quiet_min,
                outputs_declared=bool(self.outputs),
                debris_min=s.debris_min,
                quiet_for_min=quiet_min,
                weight=s.weights["debris"],
            )
        if progress_min >= s.stall_expected_factor * b.expected_min:
            touched, grew_at = (
                (self.touched, self.touched_grew_at) if self.snapshots else (self._written, self._written_grew_at)
            )
            stall = mutation_stall.check(
                elapsed_min=progress_min,
                expected_min=b.expected_min,
                factor=s.stall_expected_factor,
                stalled_for_min=(now - grew_at) / 60.0,
                stall_min=s.stall_min,
                touched=len(touched),
                weight=s.weights["mutation_stall"],
            )
        if self._drifting:
            drifted = drift.check(
                tuple(self._outside),
                streak=self._outside_streak,
                recent_edits=self.rules.drift_recent_edits,
                quiet_for_min=(now - self._in_scope_at) / 60.0,
                quiet_min=self.rules.drift_quiet_min,
                weight=self.rules.drift_weight,
            )
        findings = tuple(f for f in (deb, rep, stall, sb, poll, err, drifted, stuck) if f is not None)
        return Verdict(
            elapsed_min=elapsed_min,
            expected_min=b.expected_min,
            region=region,
            findings=findings,
            suspicion=sum(f.weight for f in findings),
            threshold=s.threshold,
            sustained=sustained.held(self, now, findings) if self.rules.sustained else None,
        )

    def next_change_after(self, now: float) -> float:
        """The earliest later moment at which the verdict can change with no new input.

        Window signals only move when calls arrive; the others cross time
        thresholds. A caller may skip evaluations until then (replay does).
        """
        s, b = self.settings, self.bucket
        start = self.started_at
        grew_at = self.touched_grew_at if self.snapshots else self._written_grew_at
        best = _sooner(now, math.inf, start + b.soft_start_min * 60)  # (no list: every walked tick asks)
        best = _sooner(now, best, start + b.stuck_min * 60)
        best = _sooner(now, best, start + s.stall_expected_factor * b.expected_min * 60)
        best = _sooner(now, best, grew_at + s.stall_min * 60)
        if len(self.debris_files) >= s.debris_min:
            best = _sooner(now, best, self.progress_at + s.progress_quiet_min * 60)
        if self._drifting:
            best = _sooner(now, best, self._in_scope_at + self.rules.drift_quiet_min * 60)
        if self._restart_due:
            best = _sooner(now, best, self._restart_due[0])
        if self._held_since is not None:
            best = _sooner(now, best, self._held_since + self.rules.sustained_min_minutes * 60)
        deadline = self.windows.next_deadline()  # a call still waiting for its result is taken when its wait runs out
        return best if deadline is None else _sooner(now, best, deadline)


def _remember(paths: dict[str, float], path: str, ts: float) -> None:
    """Add `path` (first touched at `ts`) to an ordered map capped at _PATHS, forgetting the earliest added."""
    if len(paths) >= _PATHS:
        del paths[next(iter(paths))]
    paths[path] = ts


def _sooner(now: float, best: float, c: float) -> float:
    return c if now < c < best else best
