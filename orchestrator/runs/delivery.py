"""A succeeded run's work handed back: committed on `orchestrator/<run id>` and pushed to the ticket's
repository (`deliver: branch`, the default), then an optional `pr_command:` run in the clone.

The run id is `<ticket>-<timestamp>`, so the branch names the ticket and the run. What the agent left
uncommitted is committed with a message made from the ticket (git's own identity when one is set,
else `orchestrator`). Credentials are git's own (credential helpers, an ssh agent): none are stored or
printed here, and what git says is redacted. A rejected or failing push is named in the run's reason
and the work is never lost: it is kept in the run folder's `unsaved/`, as `gc` keeps unsaved work.
Once pushed, the clone's commits are on a remote-tracking branch and its tree is clean: `gc` counts
the clone as saved.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from orchestrator.infra import git, proc, unsaved
from orchestrator.infra.errors import UserError
from orchestrator.notify.pages import redact
from orchestrator.record.model import Delivered, RunRecord

BRANCH_PREFIX = "orchestrator/"
SAVE_LIMIT = 256 * 2**20
_TIMEOUT_S = 300.0
_URL = re.compile(r"https?://\S+")
_ENV = {"GIT_TERMINAL_PROMPT": "0"}  # nobody is there to type a password: fail instead of waiting


def title_of(record: RunRecord, ticket_text: str) -> str:
    """The commit's and the PR's title: the ticket id and the first line of its body (`ticket_text` is
    the ticket file as launched, front matter and all)."""
    body = ticket_text
    if body.startswith("---"):
        end = body.find("\n---", 3)
        body = body[end + 4 :] if end != -1 else ""
    first = next((line.strip(" #-*") for line in body.splitlines() if line.strip(" #-*")), "")
    title = f"{record.ticket_id}: {first}" if first else f"{record.ticket_id} (run {record.run_id})"
    return title if len(title) <= 72 else title[:69].rstrip() + "..."


def deliver(run_path: Path, clone: Path, record: RunRecord, reason: str, now_iso: str) -> Delivered:
    """Commit what is left, push the branch, run the PR command; what happened, never raising."""
    branch = BRANCH_PREFIX + record.run_id
    out = Delivered(branch=branch)
    try:
        title = title_of(record, (run_path / "ticket.md").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        title = title_of(record, "")
    summary = f"Run {record.run_id} of ticket {record.ticket_id}, delivered by the orchestrator ({reason})."
    try:
        _git(clone, "add", "-A")
        if _git(clone, "diff", "--cached", "--quiet", ok=(0, 1))[0] == 1:
            who = [] if _git(clone, "config", "user.email", ok=(0, 1))[1].strip() else _IDENTITY
            _git(clone, *who, "commit", "-q", "-m", title, "-m", summary)
        out.commit = _git(clone, "rev-parse", "HEAD")[1].strip()
        _git(clone, "push", "-q", "origin", f"HEAD:refs/heads/{branch}")
    except UserError as exc:
        out.error = f"push of {branch} failed: {exc}{_kept(run_path, clone)}"
        return out
    out.pushed_at = now_iso
    if record.pr_command:
        out.pr_url, out.error = _pull_request(clone, record.pr_command, branch, title, summary)
    return out


_IDENTITY = ["-c", "user.name=orchestrator", "-c", "user.email=orchestrator@localhost"]


def _kept(run_path: Path, clone: Path) -> str:
    """Where the undelivered work was kept (the clone's unsaved work, saved into the run folder)."""
    try:
        saved = unsaved.save(clone, run_path / unsaved.UNSAVED_DIR, limit_bytes=SAVE_LIMIT)
    except UserError as exc:
        return f"; the work stays in the clone ({exc})"
    return f"; the work is kept in {run_path / unsaved.UNSAVED_DIR}" if saved else "; the work stays in the clone"


def _pull_request(clone: Path, argv: list[str], branch: str, title: str, summary: str) -> tuple[str | None, str | None]:
    """Run `pr_command:` with the branch, title and summary in its environment; (the URL it printed, error)."""
    env = {**_ENV, "ORCHESTRATOR_BRANCH": branch, "ORCHESTRATOR_TITLE": title, "ORCHESTRATOR_SUMMARY": summary}
    try:
        rc, out_b, err_b = proc.run(argv, cwd=clone, env=env, check=False, timeout=_TIMEOUT_S)
    except (proc.CommandError, OSError, subprocess.TimeoutExpired) as exc:
        return None, redact(f"pr_command could not run: {exc}")[:300]
    out, err = out_b.decode(errors="replace"), err_b.decode(errors="replace")
    url = _URL.search(out)
    if rc != 0:
        last = (err.strip().splitlines() or out.strip().splitlines() or ["no output"])[-1]
        return (redact(url.group(0)) if url else None), redact(f"pr_command exited {rc}: {last}")[:300]
    return (redact(url.group(0)) if url else None), None


def _git(clone: Path, *args: str, ok: tuple[int, ...] = (0,)) -> tuple[int, str]:
    return git.call(clone, *args, ok=ok, env=_ENV, timeout=_TIMEOUT_S)
