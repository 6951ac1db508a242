"""The runs a pass looks at, and one run refreshed: the pass itself is `runs/tick.py`.

Shared by `status`, `watch` and `demo`. Every run is refreshed under its
lock, from its cached detector state, so concurrent callers agree and a pass
costs what the logs gained, not their length.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from orchestrator.buckets import BucketsFile
from orchestrator.infra.errors import UserError
from orchestrator.infra.paths import runs_dir
from orchestrator.record import state_file
from orchestrator.record.layout import STATE_JSON, RunDir
from orchestrator.record.model import RunRecord
from orchestrator.runs.sending import deliver as deliver  # (fanout sends its workers' views with it)
from orchestrator.runs.steering import track
from orchestrator.runs.steps.context import KEPT as KEPT  # each run's kept detector, between passes
from orchestrator.runs.steps.context import first_view, settings_of
from orchestrator.runs.steps.feed import catch_up
from orchestrator.runs.tick import refresh as refresh
from orchestrator.runs.view import RunView


def list_run_dirs() -> list[Path]:
    root = runs_dir()
    if not root.is_dir():
        for where in (root, root.parent):  # no runs yet, unless something that is not a folder is in the way
            if where.exists() and not where.is_dir():
                raise UserError(f"{where}: cannot use it as the state folder: not a folder")
        return []
    names = sorted(e.name for e in os.scandir(root) if os.path.isfile(os.path.join(e.path, STATE_JSON)))
    return [root / name for name in names]  # (sorting names, not Paths: a tenth of the time at 3,000 runs)


def find_run(ref: str) -> Path:
    root = runs_dir()
    if ref and "/" not in ref and RunDir(root / ref).is_run():
        return root / ref
    matches = [p for p in list_run_dirs() if p.name.startswith(ref)] if ref else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise UserError(f"run {ref!r} is ambiguous: {', '.join(p.name for p in matches[:5])}")
    raise UserError(f"no run {ref!r} in {root}")


def view_as_recorded(rd: RunDir, buckets: BucketsFile) -> RunView:
    """The run's row from its record alone, nothing evaluated (runs/warmup.py: a cache being rebuilt)."""
    record = state_file.read(rd)
    return first_view(rd, record, settings_of(record, buckets), time.time())


def refresh_now(run_dir: Path) -> RunView:
    """One run refreshed as a watcher pass would (the user's settings and targets): a command about to act
    on a run (`logs -f` on a quiet log, `nudge`) learns that its supervisor died while no watcher ran."""
    from orchestrator.config import load
    from orchestrator.notify.channels import from_config
    from orchestrator.runs.pipeline import NOTICES

    cfg = load()
    return refresh(run_dir, BucketsFile(), cfg, notifier=from_config(cfg, NOTICES))


def catch_up_only(rd: RunDir, record: RunRecord, buckets: BucketsFile) -> None:
    """Bring the run's cache up to date and write it, nothing more (runs/warmup.py's workers, under the lock)."""
    if track.outstanding(record):
        return  # a receipt may be in: the pass takes it before it feeds the log, so the restart lands right
    catch_up(rd, record, settings_of(record, buckets), time.time())
    KEPT.drop(rd.detector_cache)


def broken(run_dir: Path, error: str) -> RunView:
    """A row for a run that could not be refreshed, so it is shown, not hidden."""
    try:
        record = state_file.read(run_dir)
    except UserError:
        record = RunRecord(run_id=run_dir.name, state="unreadable")
    return RunView(run_dir, record, error=error)


def forget_ended(views: list[RunView]) -> None:
    """Write and forget the kept state of runs no longer active (or gone) after a pass."""
    active = {RunDir(v.run_dir).detector_cache for v in views if v.record.active}
    for path in KEPT.paths():
        if path not in active:
            KEPT.drop(path)
