"""Git: the fresh clone at launch (GitPython), snapshots of it (plain git, cheap)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from orchestrator.infra import proc
from orchestrator.infra.errors import UserError
from orchestrator.infra.redaction import redact
from spiral.porcelain import parse_porcelain

# the transports a clone may use; git runs a command for others (ext::, fd::, remote helpers)
ALLOWED_PROTOCOLS = "file:git:ssh:https:http"


def clone(repo: str, dest: Path, *, base: str | None, branch: str) -> None:
    """A fresh clone of `repo` at `base` (default: the remote HEAD), on a new `branch`."""
    import git  # GitPython: heavy to import, and only needed at launch

    env = proc.clean_env({"GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS})
    try:
        if base:
            cloned = git.Repo.clone_from(repo, dest, env=env, branch=base)
        else:
            cloned = git.Repo.clone_from(repo, dest, env=env)
        cloned.git.checkout("-b", branch)
        cloned.close()
    except git.GitCommandError as exc:
        detail = (exc.stderr or str(exc)).strip().replace("\n", " ")
        detail = detail.removeprefix("stderr: ").strip("' ")
        raise UserError(redact(f"git clone {repo} failed: {detail}")) from None  # the URL may hold a password
    except (git.exc.UnsafeProtocolError, git.exc.UnsafeOptionError) as exc:
        raise UserError(redact(f"git clone {repo} refused: {exc}")) from None


def tracked_files(clone_dir: Path) -> list[str]:
    _, out, _ = proc.run(["git", "ls-files", "-z"], cwd=clone_dir)
    return [p for p in out.decode("utf-8", errors="replace").split("\0") if p]


def snapshot(clone_dir: Path) -> tuple[str, dict[str, str]]:
    """(porcelain -z text, {dirty path: blob id}) of the clone as it is now."""
    _, out, _ = proc.run(["git", "status", "--porcelain=v1", "-uall", "-z"], cwd=clone_dir, timeout=60)
    text = out.decode("utf-8", errors="replace")
    paths = [p for p, st in parse_porcelain(text).items() if "D" not in st and (clone_dir / p).is_file()]
    hashes: dict[str, str] = {}
    if paths:
        rc, out, _ = proc.run(
            ["git", "hash-object", "--stdin-paths"],
            cwd=clone_dir,
            input_bytes="\n".join(paths).encode() + b"\n",
            check=False,
            timeout=60,
        )
        ids = out.decode().split()
        if rc == 0 and len(ids) == len(paths):
            hashes = dict(zip(paths, ids, strict=False))
    return text, hashes


# an empty tree's id: what a repo with no commit yet is compared with
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
UNSAVED_DIR = "unsaved"  # in the run folder: what gc saved of a clone before removing it
WORK_PATCH = "work.patch"  # the changes git status shows, untracked files included (binary diff)
COMMITS_BUNDLE = "commits.bundle"  # the commits on no remote-tracking branch


def unsaved_work(clone_dir: Path) -> tuple[int, int] | None:
    """(paths git status lists, commits on no remote) of a clone: the work that exists nowhere else.
    None: git cannot tell (not a repository, a broken one)."""
    try:
        rc, out, _ = proc.run(
            ["git", "--no-optional-locks", "status", "--porcelain=v1", "-uall", "-z"],
            cwd=clone_dir,
            check=False,
            timeout=300,
        )
        if rc != 0:
            return None
        changed = len(parse_porcelain(out.decode("utf-8", errors="replace")))
        rc, out, _ = proc.run(
            ["git", "rev-list", "--count", "--branches", "--not", "--remotes"], cwd=clone_dir, check=False, timeout=300
        )
    except (OSError, proc.CommandError, subprocess.TimeoutExpired):
        return None
    commits = int(out.strip() or 0) if rc == 0 else 0
    return changed, commits


def save_unsaved(clone_dir: Path, dest: Path, *, limit_bytes: int) -> list[Path]:
    """Write the clone's unsaved work into `dest`: WORK_PATCH (apply with `git apply --binary`) and
    COMMITS_BUNDLE (`git fetch` from it); the files written. UserError when it cannot, or when it would
    pass `limit_bytes` (nothing is left half-written)."""
    found = unsaved_work(clone_dir)
    if found is None:
        raise UserError(f"{clone_dir}: git cannot read it, so its unsaved work cannot be saved")
    changed, commits = found
    if not (changed or commits):
        return []
    dest.mkdir(exist_ok=True)
    written: list[Path] = []
    index = dest / ".gc-index"
    try:
        if changed:  # stage everything in a scratch index: the clone's own index is left as it is
            env = {"GIT_INDEX_FILE": str(index)}
            rc, _, _ = proc.run(["git", "rev-parse", "--verify", "-q", "HEAD"], cwd=clone_dir, check=False)
            head = "HEAD" if rc == 0 else _EMPTY_TREE
            if rc == 0:
                proc.run(["git", "read-tree", "HEAD"], cwd=clone_dir, env=env, timeout=300)
            proc.run(["git", "add", "-A", "."], cwd=clone_dir, env=env, timeout=600)
            written.append(_git_to_file(clone_dir, ["diff", "--cached", "--binary", head], dest / WORK_PATCH, env))
        if commits:
            written.append(
                _git_to_file(
                    clone_dir, ["bundle", "create", "-", "--branches", "--not", "--remotes"], dest / COMMITS_BUNDLE
                )
            )
        if sum(p.stat().st_size for p in written) > limit_bytes:
            raise UserError(f"its unsaved work is more than {limit_bytes // 2**20} MiB to save")
    except proc.CommandError as exc:
        _unlink(written)
        raise UserError(f"{clone_dir}: saving its unsaved work failed: {exc}") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        _unlink(written)
        raise UserError(f"{clone_dir}: saving its unsaved work failed: {exc}") from None
    except UserError:
        _unlink(written)
        raise
    finally:
        index.unlink(missing_ok=True)
    return written


def _git_to_file(clone_dir: Path, args: list[str], out: Path, env: dict[str, str] | None = None) -> Path:
    """`git ARGS` with its output written to `out` (atomically: a temp file, then a rename)."""
    tmp = out.with_name(out.name + ".tmp")
    with tmp.open("wb") as fh:
        p = subprocess.run(
            ["git", *args],
            cwd=clone_dir,
            stdout=fh,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=proc.clean_env(env),
            timeout=600,
        )
        fh.flush()
        os.fsync(fh.fileno())
    if p.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise proc.CommandError(["git", *args], p.returncode, "", p.stderr.decode(errors="replace"))
    os.replace(tmp, out)
    return out


def _unlink(paths: list[Path]) -> None:
    for p in paths:
        p.unlink(missing_ok=True)
