"""A clone's unsaved work, kept before `gc` removes the clone (nothing pushes a run's work anywhere).

What `git status` lists (untracked files too, ignored ones not) becomes WORK_PATCH, a binary
patch made by plumbing (`diff-index`), so the user's diff settings (colour, no prefix, an
external diff tool) cannot make it one `git apply` refuses. Commits that no remote-tracking
ref holds (every branch, a detached HEAD, the stash, tags) become COMMITS_BUNDLE. What a patch
cannot hold is refused rather than saved wrong: a file under a clean filter (git-lfs keeps
its content in the clone's .git), a nested repository or a submodule (a patch holds only its
commit id), a folder git cannot read at all.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from orchestrator.infra import proc
from orchestrator.infra.errors import UserError
from spiral.porcelain import parse_porcelain

UNSAVED_DIR = "unsaved"  # in the run folder: what gc saved of a clone before removing it
WORK_PATCH = "work.patch"  # the changes git status shows, untracked files included (binary diff)
COMMITS_BUNDLE = "commits.bundle"  # the commits no remote-tracking ref holds
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # what a repo with no commit yet is compared with
# git run on a folder an agent wrote: none of its config may run a command here
_SAFE = ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"]
_NOT_REMOTE = ["--all", "--not", "--remotes"]


def unsaved_work(clone_dir: Path) -> tuple[int, int] | None:
    """(paths git status lists, commits no remote holds) of a clone: the work that exists nowhere else.
    None: git cannot tell (not a repository, a broken one)."""
    found = _survey(clone_dir)
    return None if found is None else (len(found[0]), found[1])


def _survey(clone_dir: Path) -> tuple[list[str], int] | None:
    """(the paths git status lists, the number of commits no remote holds), or None: git cannot tell."""
    if not (clone_dir / ".git").exists():
        return None
    try:
        rc, out, _ = _git(clone_dir, "--no-optional-locks", "status", "--porcelain=v1", "-uall", "-z")
        if rc != 0:
            return None
        dirty = list(parse_porcelain(out.decode("utf-8", errors="replace")))
        rc, out, _ = _git(clone_dir, "rev-parse", "--verify", "-q", "HEAD")
        if rc != 0:  # no commit yet: none to keep
            return dirty, 0
        rc, out, _ = _git(clone_dir, "rev-list", "--count", *_NOT_REMOTE)
        if rc != 0:
            return None
        return dirty, int(out.strip() or 0)
    except (OSError, ValueError, proc.CommandError, subprocess.TimeoutExpired):
        return None


def save(clone_dir: Path, dest: Path, *, limit_bytes: int) -> list[Path]:
    """Write the clone's unsaved work into `dest` (WORK_PATCH: `git apply --binary`; COMMITS_BUNDLE: `git
    fetch` from it); the files written. UserError when it cannot be saved whole, or is over `limit_bytes`
    (then nothing is left written)."""
    found = _survey(clone_dir)
    if found is None:
        raise UserError(f"{clone_dir}: git cannot read it, so its unsaved work cannot be saved")
    dirty, commits = found
    changed = len(dirty)
    if not (changed or commits):
        return []
    if (size := _bytes_of(clone_dir, dirty)) > limit_bytes:  # before anything is written: gc runs on full disks
        raise UserError(f"its unsaved work is {size // 2**20} MiB, more than {limit_bytes // 2**20} MiB to save")
    dest.mkdir(exist_ok=True)
    written: list[Path] = []
    index = dest / ".gc-index"
    try:
        if changed:
            written.append(_patch(clone_dir, index, dest / WORK_PATCH))
        if commits:
            written.append(_to_file(clone_dir, ["bundle", "create", "-", *_NOT_REMOTE], dest / COMMITS_BUNDLE))
        if sum(p.stat().st_size for p in written) > limit_bytes:
            raise UserError(f"its unsaved work is more than {limit_bytes // 2**20} MiB to save")
    except (proc.CommandError, OSError, subprocess.TimeoutExpired) as exc:
        _unlink(written)
        raise UserError(f"{clone_dir}: saving its unsaved work failed: {exc}") from None
    except UserError:
        _unlink(written)
        raise
    finally:
        index.unlink(missing_ok=True)
    return written


def _patch(clone_dir: Path, index: Path, out: Path) -> Path:
    """Everything git status lists, staged in a scratch index (the clone's own is left as it is), as one
    binary patch against HEAD; refused when a patch would not hold it."""
    env = {"GIT_INDEX_FILE": str(index)}
    rc, _, _ = _git(clone_dir, "rev-parse", "--verify", "-q", "HEAD")
    head = "HEAD" if rc == 0 else _EMPTY_TREE
    if rc == 0:
        _git(clone_dir, "read-tree", "HEAD", env=env, check=True)
    _git(clone_dir, "add", "-A", ".", env=env, check=True, timeout=600)
    _, raw, _ = _git(clone_dir, "diff-index", "--cached", "--raw", "-z", "--no-renames", head, env=env, check=True)
    fields = raw.decode("utf-8", errors="replace").split("\0")
    paths = [fields[i + 1] for i in range(0, len(fields) - 1, 2) if fields[i].startswith(":")]
    if any(f.startswith(":") and "160000" in f.split()[:2] for f in fields):
        raise UserError("it holds a nested repository or a submodule with changes, which a patch cannot hold")
    if paths:
        _, attrs, _ = _git(
            clone_dir, "check-attr", "-z", "--stdin", "filter", env=env, check=True, stdin="\0".join(paths)
        )
        values = attrs.decode("utf-8", errors="replace").split("\0")[2::3]
        if any(v not in ("unspecified", "unset", "") for v in values):
            raise UserError("it changes files under a clean filter (git-lfs?), whose content a patch would not hold")
    return _to_file(clone_dir, ["diff-index", "--cached", "-p", "--binary", "--no-renames", head], out, env)


def _bytes_of(clone_dir: Path, paths: list[str]) -> int:
    """The size of `paths` as they are on disk (what a patch of them would hold, about)."""
    total = 0
    for path in paths:
        try:
            total += os.lstat(clone_dir / path).st_size
        except OSError:
            pass  # deleted: a patch says so in a few bytes
    return total


def _git(
    clone_dir: Path,
    *args: str,
    env: dict[str, str] | None = None,
    check: bool = False,
    timeout: float = 300,
    stdin: str | None = None,
) -> tuple[int, bytes, bytes]:
    data = stdin.encode() if stdin is not None else None
    return proc.run(["git", *_SAFE, *args], cwd=clone_dir, env=env, check=check, timeout=timeout, input_bytes=data)


def _to_file(clone_dir: Path, args: list[str], out: Path, env: dict[str, str] | None = None) -> Path:
    """`git ARGS` with its output written to `out` (atomically: a temp file, then a rename)."""
    tmp = out.with_name(out.name + ".tmp")
    try:
        with tmp.open("wb") as fh:
            rc, err = proc.run_to_file(["git", *_SAFE, *args], fh, cwd=clone_dir, env=env, timeout=600)
            fh.flush()
            os.fsync(fh.fileno())
        if rc != 0:
            raise proc.CommandError(["git", *args], rc, "", err.decode(errors="replace"))
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _unlink(paths: list[Path]) -> None:
    for p in paths:
        p.unlink(missing_ok=True)
