"""The detector's reading of how the run changes its tree through the shell (pure: functions over a
Detector's state, kept out of spiral/detector.py).

- shell edits (rules.shell_edits): what a shell command wrote, created, removed or put back
  (spiral/shellwrites.py) is a file change, as an Edit tool's is;
- files the run made (created, untracked) and then ran or compiled are debris whatever their
  names (rules.shell_edits.made_debris), and they are no longer counted as touched;
- a log that does not say where the agent works learns it from the commands' first `cd`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from spiral import model
from spiral.call_windows import Meaning
from spiral.model import ToolCall
from spiral.observe import norm_path

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
        det._debris_in_clone = det._debris_of(det._status)  # (the memo says it is debris now)
    else:
        det._note_debris(path)
