"""Tickets: Markdown with YAML front matter; the body is the task for the agent."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from msgspec import Meta

from orchestrator.config import CloneSteps, StepKeys, UserConfig, steps_of
from orchestrator.guidance import ladder
from orchestrator.infra import step_forms, yamlfile
from orchestrator.infra.errors import UserError, read_text
from orchestrator.infra.typed_yaml import FreeMapping, Paths, PositiveFloat, convert, one_of
from orchestrator.record.case import Globs, scope_globs
from orchestrator.record.layout import CaseFiles
from orchestrator.record.model import Rung
from spiral.settings import BUCKET_NAMES

TICKET_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
# what git may clone from: it runs a command for `ext::...`, `fd::...` and any other `<helper>::...`
# or `<helper>://...` address (git-remote-<helper>), so only these transports are let through
SAFE_SCHEMES = ("file", "git", "ssh", "git+ssh", "ssh+git", "https", "http")
_HELPER = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)::")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
VERIFY_TIMEOUT_S = 600.0  # real seconds the ticket's `verify:` check may take, unless it says


def repo_problem(repo: str) -> str | None:
    """Why `git clone` must not be given `repo` (it would run a command, or read it as an option), or None."""
    if repo.startswith("-"):
        return f"repo {repo[:60]!r} starts with '-', which git would read as an option"
    if any(ord(c) < 32 for c in repo):
        return "repo must be one line with no control characters"
    helper = _HELPER.match(repo)
    if helper:
        return f"repo {repo[:60]!r}: git's {helper[1]}:: transport runs a command and is refused"
    scheme = _SCHEME.match(repo)
    if scheme and scheme[1].lower() not in SAFE_SCHEMES:
        return f"repo {repo[:60]!r}: the {scheme[1]}:// transport is refused (allowed: {', '.join(SAFE_SCHEMES)})"
    return None


def local_repo(repo: str) -> Path | None:
    """A repo given as a local path (`~` expanded; relative to the folder `launch` runs in), made absolute:
    a queued run is cloned later by the watcher, from another folder. None: a URL or `host:path`."""
    if _SCHEME.match(repo) or re.match(r"^[^/]*:", repo):
        return None
    # (and `a/./b/` or a link to it is `a/b`: one repo, one spelling, for max_parallel_per_repo)
    return Path(os.path.realpath(os.path.expanduser(repo)))


@dataclass
class Ticket:
    path: Path
    id: str
    repo: str
    bucket: str
    agent: str
    body: str
    base: str | None = None
    outputs: list[str] = field(default_factory=list)
    scope: list[str] = field(default_factory=list)  # globs the work belongs in (the drift signal)
    overrides: dict[str, Any] = field(default_factory=dict)
    demo_case: Path | None = None
    speed: float = 1.0
    escalation: list[Rung] | None = None  # the ticket's own ladder (None: the profile's, if any)
    max_usd: float | None = None  # spend ceilings (runs/budget.py); None: the profile's, if any
    max_tokens: int | None = None
    verify: list[str] = field(default_factory=list)  # the check run in the clone after the agent exits 0 (argv)
    verify_timeout_s: float = VERIFY_TIMEOUT_S
    # copy, setup, deliver, pr_command as the ticket gives them (None: the profile's, the repo block's...)
    steps: CloneSteps = field(default_factory=CloneSteps)
    text: str = ""
    lines: yamlfile.Lines = field(default_factory=dict)
    line_offset: int = 1


class _Front(StepKeys):
    id: Annotated[str, Meta(pattern=TICKET_ID.pattern, description="must match [a-z0-9][a-z0-9-]{0,63}")]
    repo: Annotated[str, Meta(pattern=r"\S", description="must be something `git clone` accepts")]
    bucket: Annotated[str, one_of(BUCKET_NAMES)]
    base: Annotated[str, Meta(pattern=r"\S", description="must be a branch name")] | None = None
    outputs: Paths | None = None
    scope: Globs | None = None
    agent: Annotated[str, Meta(description="must be an agent name")] | None = None
    overrides: FreeMapping | None = None
    demo_case: Annotated[str, Meta(description="must be a path to a corpus case folder")] | None = None
    speed: Annotated[float, Meta(gt=0, le=1000, description="must be a number in (0, 1000]")] = 1.0
    # checked by orchestrator.guidance.ladder, which owns its keys; `false` turns a profile's ladder off
    escalation: Any = None
    max_usd: Annotated[float, Meta(gt=0, description="must be a positive number of dollars")] | None = None
    max_tokens: Annotated[int, Meta(gt=0, description="must be a positive whole number of tokens")] | None = None
    verify: Any = None  # an argv, or a string run by `sh -c`: checked by step_forms.command_argv
    verify_timeout_seconds: PositiveFloat = VERIFY_TIMEOUT_S


def resolve(ref: str, cfg: UserConfig) -> Path:
    """A ticket path, or an id looked up in the configured tickets folder."""
    path = Path(ref)
    try:
        if path.is_file():
            return path
        if path.is_dir() and (path / "ticket.md").is_file():  # a ticket's own folder, as --all finds it
            return path / "ticket.md"
        if path.is_dir() and not (TICKET_ID.match(ref) and cfg.tickets_dir):  # (else: an id, looked up below)
            raise UserError(f"{ref}: a folder, with no ticket.md in it")
        if path.exists() and not path.is_dir():
            raise UserError(f"{ref}: not a regular file (a ticket is a Markdown file)")
    except OSError as exc:  # e.g. a name past the file system's limit
        raise UserError(f"{ref[:60]}{'...' if len(ref) > 60 else ''}: no such ticket file ({exc.strerror})") from None
    if TICKET_ID.match(ref) and cfg.tickets_dir:
        for cand in (cfg.tickets_dir / f"{ref}.md", cfg.tickets_dir / ref / "ticket.md"):
            if cand.is_file():
                return cand
        raise UserError(f"no ticket {ref!r} in {cfg.tickets_dir} (looked for {ref}.md)")
    if TICKET_ID.match(ref):
        raise UserError(f"{ref}: no such file, and no tickets_dir is configured in {cfg.path}")
    raise UserError(f"{ref}: no such ticket file")


def load(path: Path, cfg: UserConfig) -> Ticket:
    text = read_text(path).removeprefix("\ufeff")  # (an editor's byte-order mark)
    lines_all = text.splitlines(keepends=True)
    if not lines_all or lines_all[0].strip() != "---":
        raise UserError(f"{path}:1: a ticket starts with a '---' line and YAML front matter")
    end = next((i for i in range(1, len(lines_all)) if lines_all[i].strip() == "---"), None)
    if end is None:
        raise UserError(f"{path}: front matter is not closed by a '---' line")
    front = "".join(lines_all[1:end])
    body = "".join(lines_all[end + 1 :]).strip()
    data, lines = yamlfile.load_text(front, str(path))
    # front matter starts on line 2 of the file
    lines = {k: v + 1 for k, v in lines.items()}

    fail = yamlfile.Complaints(str(path), lines, fallback_line=1)
    front_matter = convert(data, _Front, fail, "front matter")
    if (problem := repo_problem(front_matter.repo.strip())) is not None:
        raise fail(("repo",), problem)
    agent = cfg.default_agent if front_matter.agent is None else front_matter.agent
    if agent not in cfg.profiles:
        raise fail(("agent",), f"unknown agent {agent!r} (known: {', '.join(sorted(cfg.profiles))})")
    demo_case = None
    if front_matter.demo_case is not None:
        demo_case = (path.parent / front_matter.demo_case).resolve()
        if not CaseFiles(demo_case).is_case():
            raise fail(("demo_case",), f"demo_case {front_matter.demo_case!r} is not a case folder")
    if agent == "demo" and demo_case is None:
        raise fail(("agent",), "the demo agent needs demo_case: a corpus case folder to re-enact")
    if not body:
        raise UserError(f"{path}: the ticket has no task text after the front matter")
    escalation = None
    if "escalation" in (data or {}):
        try:
            escalation = ladder.parse(front_matter.escalation)
        except ladder.LadderError as exc:
            raise fail(exc.path, exc.message) from None
    verify = step_forms.command_argv(front_matter.verify, fail, ("verify",), "verify")
    steps = steps_of(front_matter, fail, (), path.parent.resolve())  # (copy, setup, deliver, pr_command)
    repo = local_repo(front_matter.repo.strip())  # checked last: the front matter's own errors come first
    if repo is not None and not repo.exists():
        raise fail(("repo",), f"repo {front_matter.repo.strip()[:60]!r}: no such folder ({repo})")
    return Ticket(
        path=path,
        id=front_matter.id,
        repo=str(repo) if repo is not None else front_matter.repo.strip(),
        bucket=front_matter.bucket,
        agent=agent,
        body=body,
        base=front_matter.base,
        outputs=list(front_matter.outputs or ()),
        scope=list(scope_globs(front_matter.scope)),
        overrides=front_matter.overrides or {},
        demo_case=demo_case,
        speed=front_matter.speed,
        escalation=escalation,
        max_usd=front_matter.max_usd,
        max_tokens=front_matter.max_tokens,
        verify=verify,
        verify_timeout_s=front_matter.verify_timeout_seconds,
        steps=steps,
        text=text,
        lines=lines,
    )
