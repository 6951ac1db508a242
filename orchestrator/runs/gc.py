"""`gc`: remove the clones of ended runs past their retention; every record, log and snapshot stays.

Only the `clone/` folder of a run goes: `state.json`, `events.jsonl`, `workspace.jsonl`,
`case.yaml`, the ticket and the guidance folder are the run's history (`history`,
`replay`, `logs` read them) and are never touched. A run not in ENDED (queued,
launching, running, or any state a later version adds) is never touched, however
old; a run whose record cannot be read is skipped and reported.

A removal is safe to interrupt: under the run's lock the clone is renamed aside
(TRASH, one atomic rename), emptied without the lock, recorded in state.json as
`clone_removed_at` (under the lock), and only then is the empty folder removed.
A later `gc` finishes any folder it finds renamed aside, whatever its age.

Nothing pushes a run's work anywhere, so a clone may hold the only copy of it. Before a
clone goes, what `git status` lists (untracked files included, ignored ones not) is saved
as `unsaved/work.patch` and the commits on no remote-tracking branch as
`unsaved/commits.bundle`, in the run folder. A clone whose unsaved work cannot be saved,
or is more than SAVE_LIMIT to save, is left in place (and reported) unless the caller
discards it.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.infra import unsaved
from orchestrator.infra.errors import UserError
from orchestrator.infra.paths import runs_dir
from orchestrator.record import state_file
from orchestrator.record.layout import RunDir
from orchestrator.record.model import ENDED, RunRecord
from spiral.timestamps import parse_ts

DAY_S = 86400.0
# endings whose clone is kept the longer retention (as is any run that tripped the detector in the soft band)
FLAGGED_ENDINGS = ("failed", "stalled", "lost", "over_budget", "no_change", "gave_up")
TRASH = ".clone.gc-removing"  # a clone renamed aside, being removed
SAVE_LIMIT = 256 * 2**20  # unsaved work larger than this is not copied into the run folder: the clone stays


@dataclass(frozen=True)
class Retention:
    """Days an ended run's clone is kept: `days`, or `flagged_days` for a run worth a closer look."""

    days: float
    flagged_days: float

    def of(self, flagged: str | None) -> float:
        return self.flagged_days if flagged else self.days


@dataclass
class Size:
    """A folder as a real walk finds it: disk usage (each inode once) and what removing it frees.

    They differ by hard links to files outside the folder (a clone of a local repo
    shares git's objects with it): those blocks stay allocated.
    """

    bytes: int = 0
    frees: int = 0
    files: int = 0

    def __add__(self, other: Size) -> Size:
        return Size(self.bytes + other.bytes, self.frees + other.frees, self.files + other.files)


@dataclass
class Clone:
    """An ended run's clone: due for removal, or kept within its retention."""

    run_id: str
    path: Path
    state: str
    ended_at: str | None
    age_days: float
    keep_days: float
    flagged: str | None  # why the longer retention applies: spiraled | failed | stalled | lost
    size: Size = field(default_factory=Size)
    resumed: bool = False  # an interrupted gc left it half-removed
    removed: bool = False
    error: str | None = None
    unsaved: tuple[int, int] | None = None  # (paths git status lists, commits on no remote) when the plan looked
    saved: list[str] = field(default_factory=list)  # what was saved of it in the run folder before it went

    @property
    def has_unsaved(self) -> bool:
        return self.unsaved is not None and any(self.unsaved)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "state": self.state,
            "flagged": self.flagged,
            "ended_at": self.ended_at,
            "age_days": round(self.age_days, 2),
            "keep_days": float(self.keep_days),
            "size_bytes": self.size.bytes,
            "frees_bytes": self.size.frees,
            "files": self.size.files,
            "resumed": self.resumed,
            "removed": self.removed,
            "error": self.error,
            "unsaved_paths": self.unsaved[0] if self.unsaved else 0,
            "unsaved_commits": self.unsaved[1] if self.unsaved else 0,
            "saved": list(self.saved),
        }

    def kept_dict(self) -> dict[str, Any]:
        left = max(0.0, self.keep_days - self.age_days)
        return {
            "run_id": self.run_id,
            "state": self.state,
            "flagged": self.flagged,
            "age_days": round(self.age_days, 2),
            "keep_days": float(self.keep_days),
            "due_in_days": round(left, 2),
        }


@dataclass
class Plan:
    retention: Retention
    due: list[Clone] = field(default_factory=list)
    kept: list[Clone] = field(default_factory=list)
    untouched: list[tuple[str, str, str]] = field(default_factory=list)  # (run id, state, why)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (run id, why)

    @property
    def total(self) -> Size:
        return sum((c.size for c in self.due), Size())

    def to_dict(self, dry_run: bool) -> dict[str, Any]:
        done = [c for c in self.due if c.removed]
        return {
            "dry_run": dry_run,
            "keep_days": float(self.retention.days),
            "keep_days_flagged": float(self.retention.flagged_days),
            "clones": [c.to_dict() for c in self.due],
            "removed": len(done),
            "size_bytes": self.total.bytes,
            "frees_bytes": self.total.frees,
            "kept": [c.kept_dict() for c in self.kept],
            "untouched": [{"run_id": r, "state": s, "why": w} for r, s, w in self.untouched],
            "skipped": [{"run_id": r, "why": w} for r, w in self.skipped],
        }


def flag(record: RunRecord) -> str | None:
    """Why this run's clone is worth keeping longer (None: the default retention)."""
    if record.spiral.tripped_in_soft_band:
        return "spiraled"
    return record.state if record.state in FLAGGED_ENDINGS else None


def untouchable(record: RunRecord) -> str | None:
    """Why gc must leave this run's clone alone whatever its age, or None."""
    if record.state not in ENDED:
        return f"{record.state}: not ended"
    if record.supervisor is not None and record.supervisor.alive():
        return "its supervisor is still finishing"
    if record.agent_pid is not None and record.agent_pid.alive():
        return "its agent is still alive"
    if record.verify_pid is not None and record.verify_pid.alive():
        return "its verify: check is still running"
    return None


def plan(retention: Retention, *, now: float | None = None, root: Path | None = None) -> Plan:
    """Every run folder's clone sorted into due, kept, untouched and skipped (nothing is changed)."""
    now = time.time() if now is None else now
    root = runs_dir() if root is None else root
    out = Plan(retention)
    folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    for path in folders:
        rd = RunDir(path)
        trash = path / TRASH
        there = [p for p in (rd.clone, trash) if os.path.lexists(p)]
        if not there:
            continue  # removed already, or never cloned: nothing to free
        if not rd.is_run():
            out.skipped.append((rd.run_id, "no state.json: not a run folder gc can judge"))
            continue
        try:
            record = state_file.read(rd)
        except UserError as exc:  # unreadable, invalid, or from a newer version
            out.skipped.append((rd.run_id, str(exc)))
            continue
        if why := untouchable(record):
            out.untouched.append((rd.run_id, record.state, why))
            continue
        ended = parse_ts(record.ended_at)
        if ended is None:
            out.skipped.append((rd.run_id, f"{record.state} but no ended_at: its age is unknown"))
            continue
        flagged = flag(record)
        clone = Clone(
            rd.run_id, path, record.state, record.ended_at, (now - ended) / DAY_S, retention.of(flagged), flagged
        )
        clone.resumed = trash in there
        if clone.resumed or clone.age_days >= clone.keep_days:
            clone.size = sum((measure(p) for p in there), Size())
            if not clone.resumed:
                clone.unsaved = unsaved.unsaved_work(rd.clone)
            out.due.append(clone)
        else:
            out.kept.append(clone)
    out.due.sort(key=lambda c: -c.age_days)  # oldest first
    out.kept.sort(key=lambda c: c.keep_days - c.age_days)  # the next due first
    return out


def remove(clone: Clone, progress: Callable[[Clone], None] | None = None, *, discard_unsaved: bool = False) -> None:
    """Remove one planned clone (sets `removed`, or `error` and leaves what is left for the next gc); its
    unsaved work is saved in the run folder first, unless `discard_unsaved`."""
    rd = RunDir(clone.path)
    trash = rd.path / TRASH
    try:
        if os.path.lexists(trash):
            _delete(trash, keep=True)  # an interrupted gc's leftovers first: then the rename has room
        if (
            not discard_unsaved and (rd.clone / ".git").exists() and not rd.clone.is_symlink()
        ):  # (no .git: no work git knows)
            try:
                saved = unsaved.save(rd.clone, rd.path / unsaved.UNSAVED_DIR, limit_bytes=SAVE_LIMIT)
            except UserError as exc:
                clone.error = f"left in place: {exc} (`gc --discard-unsaved` removes it anyway)"
                if progress is not None:
                    progress(clone)
                return
            clone.saved = [str(p.relative_to(rd.path)) for p in saved]
        with state_file.locked(rd):
            record = state_file.read(rd)  # again, under the lock: it may have changed since the plan
            if why := untouchable(record):
                clone.error = f"left alone: {why}"
                return
            if os.path.lexists(rd.clone):
                os.rename(rd.clone, trash)
        if os.path.lexists(trash):
            _delete(trash, keep=True)  # the long part, without the lock
        state_file.update(rd, _mark_removed)
        if os.path.lexists(trash):
            _delete(trash)
    except UserError as exc:
        clone.error = str(exc)
    except OSError as exc:
        clone.error = f"{exc.filename or clone.path}: {exc.strerror or exc}"
    else:
        clone.removed = True
    if progress is not None:
        progress(clone)


def _mark_removed(record: RunRecord) -> bool:
    if record.clone_removed_at is not None:
        return False
    record.clone_removed_at = state_file.utcnow()
    return True


def _delete(path: Path, *, keep: bool = False) -> None:
    """Remove `path` (only its contents with `keep`); folders without write permission get it first."""
    if path.is_symlink() or not path.is_dir():
        if not keep:
            path.unlink(missing_ok=True)
        return
    for attempt in (1, 2):
        try:
            with os.scandir(path) as entries:
                for entry in list(entries):
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path)
                    else:
                        os.unlink(entry.path)
            if not keep:
                path.rmdir()
            return
        except PermissionError:
            if attempt == 2:
                raise
            _make_writable(path)


def _make_writable(top: Path) -> None:
    """Give the owner rwx on `top` and every folder under it (an agent may leave read-only trees)."""
    for folder, dirs, _files in os.walk(top, onerror=lambda exc: None):
        for d in [folder, *(os.path.join(folder, x) for x in dirs)]:
            try:
                mode = os.lstat(d).st_mode
                if stat.S_ISDIR(mode) and mode & stat.S_IRWXU != stat.S_IRWXU:
                    os.chmod(d, mode | stat.S_IRWXU)
            except OSError:
                pass


def measure(top: Path) -> Size:
    """The real size of `top` from a walk: allocated blocks, each inode once, symlinks not followed."""
    links: dict[tuple[int, int], list[int]] = {}  # inode -> [links met, st_nlink, bytes]
    size = Size()
    stack = [str(top)]
    try:
        st = os.lstat(top)
    except OSError:
        return size
    if not stat.S_ISDIR(st.st_mode):
        used = _used(st)
        return Size(used, used if st.st_nlink <= 1 else 0, 1)
    size.bytes = size.frees = _used(st)
    while stack:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue  # unreadable: counted as nothing rather than guessed
        with it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    size.bytes += _used(st)
                    size.frees += _used(st)
                    stack.append(entry.path)
                    continue
                seen = links.setdefault((st.st_dev, st.st_ino), [0, st.st_nlink, _used(st)])
                seen[0] += 1
    for met, nlink, used in links.values():
        size.bytes += used
        size.files += 1
        if met >= nlink:  # every name of it is inside: removing them frees it
            size.frees += used
    return size


def _used(st: os.stat_result) -> int:
    blocks = getattr(st, "st_blocks", None)
    return blocks * 512 if blocks is not None else st.st_size


def human(n: int) -> str:
    """1536 as 1.5 KiB."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # not reached
