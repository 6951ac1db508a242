"""The `diff` command (the command line registers it): what a run changed, from its clone while it is
there, and after `gc` from the branch it delivered or the work `gc` (or a failed push) kept."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from orchestrator.infra import git
from orchestrator.infra.errors import UserError
from orchestrator.infra.unsaved import COMMITS_BUNDLE, UNSAVED_DIR, WORK_PATCH
from orchestrator.record.layout import RunDir
from orchestrator.record.model import RunRecord

_GIT_TIMEOUT_S = 300.0
_QUIET = ["-c", "core.quotepath=off"]
_FETCH_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ALLOW_PROTOCOL": git.ALLOWED_PROTOCOLS}


def diff_command(
    run: Annotated[str, typer.Argument(help="Run id (or a unique prefix).")],
    stat: Annotated[bool, typer.Option("--stat", help="Only the files and their added / removed line counts.")] = False,
) -> None:
    """What the run changed against the commit its agent started from:
    committed and uncommitted changes to tracked files, and new files git
    does not ignore, as one patch (or, with --stat, a summary).

    It reads the run's clone. Once `gc` has removed the clone, it reads the
    branch the run delivered (fetched from the ticket's repository), else
    the work kept in the run folder's `unsaved/` (a bundle of commits needs
    the repository too, for the commits it builds on).
    """
    from orchestrator.record import state_file
    from orchestrator.runs.monitor import find_run

    rd = RunDir.of(find_run(run))
    record = state_file.read(rd)
    if (rd.clone / ".git").exists():
        out = _from_clone(rd, record, stat)
    elif record.delivered is not None and record.delivered.pushed_at is not None and record.delivered.commit:
        out = _from_branch(rd, record, stat)
    elif (rd.path / UNSAVED_DIR).is_dir():
        out = _from_kept(rd, record, stat)
    else:
        raise UserError(
            f"run {rd.run_id}: its clone is gone (gc removed it) and it left no unsaved work or delivered "
            "branch: nothing it changed existed only in its clone"
        )
    since = f" since {record.start_commit[:12]}" if record.start_commit else ""
    typer.echo(out.rstrip("\n") if out.strip() else f"run {rd.run_id} changed nothing{since}")


def _from_clone(rd: RunDir, record: RunRecord, stat: bool) -> str:
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
    return "\n".join(out)


def _from_branch(rd: RunDir, record: RunRecord, stat: bool) -> str:
    """The delivered commit against the start, both fetched from the ticket's repository into a scratch one."""
    assert record.delivered is not None and record.delivered.commit is not None
    branch, commit = record.delivered.branch, record.delivered.commit
    with _scratch() as where:
        _fetch(where, record.repo, f"+refs/heads/{branch}:refs/delivered", f"run {rd.run_id}'s branch {branch}")
        start = _start_in(where, record, commit)
        return _git(where, "diff", "--no-ext-diff", "--no-color", *(["--stat"] if stat else []), start, commit, "--")


def _from_kept(rd: RunDir, record: RunRecord, stat: bool) -> str:
    """The run folder's `unsaved/`: its commits (a bundle, on top of the repository's) and its patch."""
    kept = rd.path / UNSAVED_DIR
    parts: list[str] = []
    if (kept / COMMITS_BUNDLE).is_file():
        with _scratch() as where:
            _fetch(where, record.repo, "+refs/heads/*:refs/remotes/origin/*", "the commits its kept bundle builds on")
            _git(where, "fetch", "-q", str(kept / COMMITS_BUNDLE), "+HEAD:refs/kept")
            start = _start_in(where, record, "refs/kept")
            parts.append(
                _git(
                    where,
                    "diff",
                    "--no-ext-diff",
                    "--no-color",
                    *(["--stat"] if stat else []),
                    start,
                    "refs/kept",
                    "--",
                )
            )
    if (kept / WORK_PATCH).is_file():
        if stat:
            parts.append(_git(kept, "apply", "--stat", WORK_PATCH))
        else:
            parts.append((kept / WORK_PATCH).read_text(encoding="utf-8", errors="replace"))
    head = f"(from {kept}: the clone is gone)\n"
    return head + "\n".join(p.rstrip("\n") for p in parts if p.strip())


@contextmanager
def _scratch() -> Iterator[Path]:
    """An empty bare repository to fetch a gone clone's commits into, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="orchestrator-diff-") as scratch:
        _git(Path(scratch), "init", "-q", "--bare")
        yield Path(scratch)


def _start_in(where: Path, record: RunRecord, tip: str) -> str:
    """The commit the agent started from, present in the scratch repository (it is an ancestor of `tip`)."""
    start = record.start_commit
    if start is None or git.call(where, "cat-file", "-e", f"{start}^{{commit}}", ok=(0, 1, 128))[0] != 0:
        raise UserError(f"run {record.run_id}: the commit its agent started from is not among the commits up to {tip}")
    return start


def _fetch(where: Path, repo: str | None, refspec: str, what: str) -> None:
    if not repo:
        raise UserError(f"cannot fetch {what}: the run's record names no repository")
    try:
        git.call(where, "fetch", "-q", "--no-tags", "--", repo, refspec, env=_FETCH_ENV, timeout=_GIT_TIMEOUT_S)
    except UserError as exc:
        raise UserError(f"cannot fetch {what} from {repo}: {exc}") from None


def _git(cwd: Path, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    return git.call(cwd, *_QUIET, *args, ok=ok, timeout=_GIT_TIMEOUT_S)[1]


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
