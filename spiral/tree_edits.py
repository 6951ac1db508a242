"""The detector's reading of how the run changes its tree through the shell, and of how long its
loop evidence has held (pure: functions over a Detector's state, kept out of spiral/detector.py).

- shell edits (rules.shell_edits): what a shell command wrote, created, removed or put back
  (spiral/shellwrites.py) is a file change, as an Edit tool's is;
- files the run made (created, untracked) and then ran or compiled are debris whatever their
  names (rules.shell_edits.made_debris), and they are no longer counted as touched;
- a log that does not say where the agent works learns it from the commands' first `cd`;
- the sustained-loop rule (rules.sustained): loop evidence held long enough pages before the band.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from spiral import model
from spiral.call_windows import Meaning
from spiral.model import ToolCall
from spiral.observe import norm_path
from spiral.signals import mutation_stall
from spiral.verdict import Finding

if TYPE_CHECKING:
    from spiral.detector import Detector

_MADE = 256  # files the run made, the latest remembered (a scratch file is run soon after it is made)
_CD_ABS = re.compile(r"\s*cd\s+(/[\w./-]+?)/?\s*(?:&&|;|\n)")
_NOT_WORKDIRS = ("/tmp", "/var", "/dev", "/proc", "/sys", "/etc", "/usr", "/private")


def made(det: Detector, path: str) -> None:
    """`path` was made by the run: remembered (the latest _MADE) for probes and debris."""
    files = det.windows.made
    if path in files:
        return
    if len(files) >= _MADE:
        del files[next(iter(files))]
    files[path] = None


def learn_workdir(det: Detector, command: str) -> None:
    """A log that does not say where the agent works (a converted trajectory): the folder its
    commands first `cd` into is taken as the workdir, so `/testbed/x.py` and `x.py` are one file."""
    m = _CD_ABS.match(command)
    if m and not m.group(1).startswith(_NOT_WORKDIRS):
        det.workdir = m.group(1).rstrip("/") or None
        det._meaning.clear()


def shell_wrote(det: Detector, meaning: Meaning, call: ToolCall) -> None:
    """What a shell command changed, as an edit tool's change (rules.shell_edits)."""
    w = meaning.writes
    assert w is not None
    ts, cwd, workdir = call.ts, call.cwd, det.workdir
    for raw in w.created:
        path = norm_path(raw, workdir, cwd)
        if path and path not in det.tracked:
            made(det, path)  # (outside the clone too: a probe in /tmp is the run's probe)
    for group, revert in ((w.paths, False), (w.removed, False), (w.reverted, True)):
        for raw in group:
            path = norm_path(raw, workdir, cwd)
            if not path or (workdir is not None and path.startswith("/")):
                continue  # outside the clone
            if revert and det.rules.outcomes:
                det.windows.note_revert(path)
            det._changed(path, ts)
            if not det.snapshots and not revert and group is w.paths:
                det._wrote(path, ts)
    if w.unknown:
        changed_unnamed(det, ts, w.reverts_all)


def changed_unnamed(det: Detector, ts: float, revert: bool) -> None:
    """A command changed files it does not name (`patch`, `git apply`, `git stash`)."""
    det.windows.note_change("(files a patch or git command changed)", True)
    if ts > det.progress_at and not det.outputs:
        det.progress_at = ts
    if revert and det.rules.outcomes:
        for path in list(det._blobs)[-8:]:
            det.windows.note_revert(path)  # the files changed last are the ones put back


def wrote_file(det: Detector, path: str, call: ToolCall) -> None:
    """A Write tool's file is one the run made when it did not exist before, and so is an edit tool's
    that says it created the file (OpenHands' `create`) (shell_edits)."""
    if path in det.tracked or path in det.touched:
        return
    said_created = "created" in (call.output_ends or "")[:200].lower()
    if (path in det._written or call.tool != model.WRITE) and not said_created:
        return  # written before (it existed), or an edit of a file that was there
    made(det, path)


def ran_made(det: Detector, path: str) -> None:
    """A file the run made at the top of the clone is now run or compiled: a scratch file, debris
    whatever its name."""
    if path in det._made_debris or path in det.outputs or "/" in path:
        # a file outside the clone is the run's probe but no debris in it; one the run made inside the
        # project's folders (scripts/, src/) is likely a deliverable: scratch files land at the top
        return
    if det._scope is not None and det._scope.match(path):
        return
    det._made_debris[path] = None
    det._debris_memo[path] = True
    det.touched.pop(path, None)
    det._written.pop(path, None)
    det.touched_grew_at = max([det.started_at, *det.touched.values()])
    det._written_grew_at = max([det.started_at, *det._written.values()])
    for at, _ in det.restarts:
        det.touched_grew_at = max(det.touched_grew_at, at)
        det._written_grew_at = max(det._written_grew_at, at)
    if det.snapshots:
        st = det._status.get(path)
        if st is not None and (st == "??" or st[0] == "A") and path not in det._debris_in_clone:
            det._debris_in_clone = det._debris_in_clone + (path,)
    elif len(det._debris_written) < _DEBRIS:
        det._debris_written[path] = None


_DEBRIS = 4096  # (as spiral/detector.py's: debris files written, remembered while no snapshot came)


def sustained(det: Detector, now: float, findings: tuple[Finding, ...]) -> str | None:
    """Whether loop evidence (every signal but mutation_stall, a timer of its own) has held at the
    rule's threshold for `min_minutes` and `min_calls`, at `min_calls_per_min`: the page then need not
    wait for the soft band. A finding that names where its evidence began (`since`: stuck_check's first
    attempt of the stuck check) holds from there: the loop has lasted since, not since it was counted."""
    r = det.rules
    loop = sum(f.weight for f in findings if f.signal != mutation_stall.NAME)
    if loop < r.sustained_threshold or not findings:
        det._held_since = None
        return None
    if det._held_since is None or now < det._held_since:
        det._held_since, det._held_calls = now, det.calls
    since, before = det._held_since, det._held_calls
    for f in findings:  # a finding strong enough alone holds since the first call its evidence counts
        if f.since is not None and f.weight >= r.sustained_threshold and f.since[0] < since:
            since, before = f.since
    held_min = (now - since) / 60.0
    held_calls = det.calls - before
    if held_min < r.sustained_min_minutes or held_calls < r.sustained_min_calls:
        return None
    if held_calls < r.sustained_min_pace * held_min:
        return None  # a slow loop (long test runs): the soft band is soon enough
    return f"loop evidence held for {held_min:.0f} min over {held_calls} tool calls (sustained-loop rule)"
