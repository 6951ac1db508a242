"""`copy:`: files from outside the repository (a `.env`, credentials a test needs) copied into a run's
fresh clone before its set-up. Each copy is added to the clone's `.git/info/exclude`, so git never
sees it: it is not the run's work, never committed by delivery, never kept by `gc`. A copy that would
land on a tracked file, or through a link out of the clone, is refused rather than made."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from orchestrator.infra import git, proc


def copy_in(clone: Path, items: list[list[str]]) -> str | None:
    """Copy each (source, path in the clone) in; None when all were copied, else why not (the run's reason)."""
    try:
        tracked = set(git.tracked_files(clone))
    except (proc.CommandError, OSError, subprocess.TimeoutExpired) as exc:  # the reason, never a crash
        return f"copy: git cannot list the clone's files: {exc}"
    root = clone.resolve()
    for source, dest in items:
        if dest in tracked or any(path.startswith(dest + "/") for path in tracked):
            return f"copy: {dest} is tracked in the repository; copy it to a path git does not track"
        target = clone / dest
        if not target.parent.resolve().is_relative_to(root) or target.is_symlink():
            return f"copy: {dest} would land outside the clone (through a link)"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if os.path.isdir(source):
                shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
            else:
                shutil.copy2(source, target)
        except OSError as exc:
            return f"copy: {source} -> {dest}: {exc.strerror or exc}"
    return _exclude(clone, [dest for _, dest in items])


def _exclude(clone: Path, dests: list[str]) -> str | None:
    """Append the copies to the clone's own ignore list (`.git/info/exclude`, never committed)."""
    lines = ["# copied in by the orchestrator (copy:): not the run's work"]
    lines += ["/" + _literal(dest) for dest in dests]
    try:
        info = clone / ".git" / "info"
        info.mkdir(parents=True, exist_ok=True)
        with (info / "exclude").open("a", encoding="utf-8") as fh:
            fh.write("\n" + "\n".join(lines) + "\n")
    except OSError as exc:
        return f"copy: cannot keep the copies out of git (.git/info/exclude: {exc.strerror or exc})"
    return None


def _literal(path: str) -> str:
    """`path` as a gitignore pattern that matches only itself."""
    out = "".join("\\" + c if c in "\\*?[" else c for c in path)
    if out.endswith(" "):
        out = out[:-1] + "\\ "
    return out
