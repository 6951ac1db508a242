"""Git: the fresh clone at launch (GitPython), snapshots of it (plain git, cheap)."""

from __future__ import annotations

import os
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

    # a remote that stalls (accepts, then sends next to nothing) ends the clone, rather than hold the watcher's
    # pass (which starts queued runs) for ever
    env = proc.clean_env(
        {
            "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS,
            "GIT_HTTP_LOW_SPEED_LIMIT": "1000",
            "GIT_HTTP_LOW_SPEED_TIME": str(_stall_s()),
        }
    )
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


def _stall_s() -> int:
    """Seconds a clone over http(s) may move under 1 KB/s before it is given up ($ORCHESTRATOR_CLONE_STALL_SECONDS)."""
    try:
        return max(1, int(os.environ.get("ORCHESTRATOR_CLONE_STALL_SECONDS") or 60))
    except ValueError:
        return 60


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
