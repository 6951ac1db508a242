"""The `diff` command (the command line registers it): what a run changed in its clone."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.infra.errors import UserError

_GIT_TIMEOUT_S = 120


def diff_command(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    stat: Annotated[bool, typer.Option("--stat", help="Only the files and their added / removed line counts.")] = False,
) -> None:
    """What the run changed against the commit its agent started from: committed and uncommitted
    changes to tracked files, and new files git does not ignore, as one patch (or, with --stat, a
    summary). It reads the run's clone; once `gc` has removed the clone, the work it saved is in
    the run folder's `unsaved/` (README: "Disk: gc").
    """
    from orchestrator.record import state_file
    from orchestrator.record.layout import RunDir
    from orchestrator.runs.monitor import find_run

    rd = RunDir.of(find_run(run))
    record = state_file.read(rd)
    if not (rd.clone / ".git").exists():
        saved = rd.path / "unsaved"
        where = f"; what it saved is in {saved}" if saved.is_dir() else ""
        raise UserError(f"run {rd.run_id}: its clone is gone (gc removed it){where}")
    start = record.start_commit or _origin_head(rd.clone)
    if start is None:
        raise UserError(f"run {rd.run_id}: cannot tell which commit its agent started from")
    tracked = _git(rd.clone, "diff", "--no-ext-diff", "--no-color", *(["--stat"] if stat else []), start, "--")
    new = [p for p in _git(rd.clone, "ls-files", "--others", "--exclude-standard", "-z").split("\0") if p]
    out = [tracked.rstrip("\n")] if tracked.strip() else []
    for path in new:
        if stat:
            out.append(f" {path} | {_lines(rd.clone / path)} + (new, untracked)")
        else:
            out.append(_new_file_patch(rd.clone, path).rstrip("\n"))
    typer.echo("\n".join(out) if out else f"run {rd.run_id} changed nothing since {start[:12]}")


def _git(clone: Path, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    from orchestrator.infra import proc

    try:
        rc, out, err = proc.run(
            ["git", "-c", "core.quotepath=off", *args], cwd=clone, check=False, timeout=_GIT_TIMEOUT_S
        )
    except (proc.CommandError, OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"git {args[0]} in {clone}: {exc}") from None
    if rc not in ok:
        last = (err.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise UserError(f"git {args[0]} in {clone} failed: {last}")
    return out.decode(errors="replace")


def _origin_head(clone: Path) -> str | None:
    """A record older than `start_commit`: the commit the clone was made at, as its remote named it."""
    try:
        return _git(clone, "rev-parse", "-q", "--verify", "refs/remotes/origin/HEAD").strip() or None
    except UserError:
        return None


def _new_file_patch(clone: Path, path: str) -> str:
    # `--no-index` against /dev/null: a patch adding the file, without touching the clone's index
    return _git(clone, "diff", "--no-ext-diff", "--no-color", "--no-index", "--", "/dev/null", path, ok=(0, 1))


def _lines(path: Path) -> int:
    try:
        with path.open("rb") as fh:
            return sum(1 for _ in fh)
    except OSError:
        return 0
