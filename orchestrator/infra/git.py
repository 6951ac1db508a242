"""Git: the fresh clone at launch (GitPython), snapshots of it (plain git, cheap)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from orchestrator.infra import proc
from orchestrator.infra.errors import UserError
from orchestrator.infra.redaction import redact
from spiral.porcelain import parse_porcelain

# the transports a clone may use; git runs a command for others (ext::, fd::, remote helpers)
ALLOWED_PROTOCOLS = "file:git:ssh:https:http"


def clone(repo: str, dest: Path, *, base: str | None, branch: str, stop: Callable[[], bool] | None = None) -> None:
    """A fresh clone of `repo` at `base` (default: the remote HEAD), on a new `branch`.

    A remote that stalls (accepts, then sends nothing: over git://, ssh or http alike) ends the
    clone after $ORCHESTRATOR_CLONE_STALL_SECONDS without progress, rather than hold the pass that
    starts queued runs for ever; `stop()` (a kill of the run) ends it at once."""
    env = {
        "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS,
        "GIT_HTTP_LOW_SPEED_LIMIT": "1000",  # (curl's own bound, over http: its message names the cause)
        "GIT_HTTP_LOW_SPEED_TIME": str(_stall_s()),
        "GIT_TERMINAL_PROMPT": "0",  # nobody is there to type a password: fail instead of waiting
    }
    argv = ["git", "clone", "--progress", *(["--branch", base] if base else []), "--", repo, str(dest)]
    rc, err, why = proc.run_watched(argv, env=env, stall_s=_stall_s() + 5, stop=stop)
    if why is not None or rc != 0:
        detail = why or _last_words(err.decode("utf-8", errors="replace"))
        raise UserError(redact(f"git clone {repo} failed: {detail}"))  # the URL may hold a password
    try:
        proc.run(["git", "checkout", "-q", "-b", branch], cwd=dest, timeout=120)
    except proc.CommandError as exc:
        raise UserError(redact(f"git checkout -b {branch} in the clone of {repo} failed: {exc.err.strip()}")) from None


def _last_words(stderr: str) -> str:
    """What git said went wrong: its fatal/error lines, else its last line (progress lines dropped)."""
    lines = [x.strip() for x in stderr.replace("\r", "\n").splitlines() if x.strip()]
    said = [x for x in lines if x.startswith(("fatal:", "error:"))] or lines[-1:]
    return " ".join(said)[:2000] or "no message"


def _stall_s() -> int:
    """Seconds a clone over http(s) may move under 1 KB/s before it is given up ($ORCHESTRATOR_CLONE_STALL_SECONDS)."""
    try:
        return max(1, int(os.environ.get("ORCHESTRATOR_CLONE_STALL_SECONDS") or 60))
    except ValueError:
        return 60


def tracked_files(clone_dir: Path) -> list[str]:
    _, out, _ = proc.run(["git", "ls-files", "-z"], cwd=clone_dir)
    return [p for p in out.decode("utf-8", errors="replace").split("\0") if p]


def head(clone_dir: Path) -> str | None:
    """The commit the clone is at, or None when git cannot say (no commit yet, not a repository)."""
    rc, out, _ = proc.run(["git", "rev-parse", "-q", "--verify", "HEAD"], cwd=clone_dir, check=False, timeout=60)
    return (out.decode().strip() or None) if rc == 0 else None


def changed_since(clone_dir: Path, start: str) -> list[str] | None:
    """The clone's paths that differ from commit `start`: tracked files changed, committed or not, and new
    files (untracked, not ignored). None when git cannot compare (the commit is gone, git failed)."""
    diff = proc.run(["git", "diff", "--name-only", "-z", start], cwd=clone_dir, check=False, timeout=120)
    new = proc.run(["git", "ls-files", "--others", "--exclude-standard", "-z"], cwd=clone_dir, check=False, timeout=120)
    if diff[0] != 0 or new[0] != 0:
        return None
    paths = (diff[1] + b"\0" + new[1]).decode("utf-8", errors="replace").split("\0")
    return sorted({p for p in paths if p})


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


def call(
    cwd: Path, *args: str, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None, timeout: float = 300.0
) -> tuple[int, str]:
    """(exit code, stdout) of `git ARGS` in `cwd`; a UserError in git's own words (redacted: a URL may
    hold a password) when it cannot run or exits with a code not in `ok`."""
    try:
        rc, out, err = proc.run(["git", *args], cwd=cwd, env=env, check=False, timeout=timeout)
    except (proc.CommandError, OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(redact(f"git {args[0]}: {exc}")) from None
    if rc not in ok:
        words = [x.strip() for x in err.decode(errors="replace").splitlines() if x.strip()]
        said = [x for x in words if x.startswith(("fatal:", "error:", "remote:", " ! ["))] or words[-1:]
        raise UserError(redact(" ".join(said)[:400] or f"git {args[0]} exited {rc}"))
    return rc, out.decode(errors="replace")
