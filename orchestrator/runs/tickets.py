"""Tickets: Markdown with YAML front matter; the body is the task for the agent."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.config import UserConfig
from orchestrator.infra import yamlfile
from orchestrator.infra.errors import UserError
from spiral.settings import BUCKET_NAMES

TICKET_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_KEYS = {"id", "repo", "base", "bucket", "outputs", "agent", "overrides", "demo_case", "speed"}


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
    overrides: dict[str, Any] = field(default_factory=dict)
    demo_case: Path | None = None
    speed: float = 1.0
    text: str = ""
    lines: yamlfile.Lines = field(default_factory=dict)
    line_offset: int = 1


def resolve(ref: str, cfg: UserConfig) -> Path:
    """A ticket path, or an id looked up in the configured tickets folder."""
    path = Path(ref)
    if path.is_file():
        return path
    if TICKET_ID.match(ref) and cfg.tickets_dir:
        for cand in (cfg.tickets_dir / f"{ref}.md", cfg.tickets_dir / ref / "ticket.md"):
            if cand.is_file():
                return cand
        raise UserError(f"no ticket {ref!r} in {cfg.tickets_dir} (looked for {ref}.md)")
    if TICKET_ID.match(ref):
        raise UserError(f"{ref}: no such file, and no tickets_dir is configured in {cfg.path}")
    raise UserError(f"{ref}: no such ticket file")


def load(path: Path, cfg: UserConfig) -> Ticket:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
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
    fail.mapping(data, _KEYS, "front matter", ("id", "repo", "bucket"))
    tid = data["id"]
    if not isinstance(tid, str) or not TICKET_ID.match(tid):
        raise fail(("id",), f"id must match [a-z0-9][a-z0-9-]{{0,63}}, got {tid!r}")
    if not isinstance(data["repo"], str) or not data["repo"].strip():
        raise fail(("repo",), "repo must be something `git clone` accepts")
    if data["bucket"] not in BUCKET_NAMES:
        raise fail(("bucket",), f"bucket must be one of {', '.join(BUCKET_NAMES)}, got {data['bucket']!r}")
    base = data.get("base")
    if base is not None and (not isinstance(base, str) or not base.strip()):
        raise fail(("base",), "base must be a branch name")
    outputs = data.get("outputs") or []
    if not isinstance(outputs, list) or not all(isinstance(o, str) and o for o in outputs):
        raise fail(("outputs",), "outputs must be a list of paths")
    agent = data.get("agent", cfg.default_agent)
    if not isinstance(agent, str) or agent not in cfg.profiles:
        raise fail(("agent",), f"unknown agent {agent!r} (known: {', '.join(sorted(cfg.profiles))})")
    overrides = data.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise fail(("overrides",), "overrides must be a mapping")
    demo_case = None
    if "demo_case" in data:
        if not isinstance(data["demo_case"], str):
            raise fail(("demo_case",), "demo_case must be a path to a corpus case folder")
        demo_case = (path.parent / data["demo_case"]).resolve()
        if not (demo_case / "case.yaml").is_file():
            raise fail(("demo_case",), f"demo_case {data['demo_case']!r} is not a case folder")
    if agent == "demo" and demo_case is None:
        raise fail(("agent",), "the demo agent needs demo_case: a corpus case folder to re-enact")
    speed = data.get("speed", 1.0)
    if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not 0 < speed <= 1000:
        raise fail(("speed",), "speed must be a number in (0, 1000]")
    if not body:
        raise UserError(f"{path}: the ticket has no task text after the front matter")
    return Ticket(
        path=path,
        id=tid,
        repo=data["repo"].strip(),
        bucket=data["bucket"],
        agent=agent,
        body=body,
        base=base,
        outputs=list(outputs),
        overrides=overrides,
        demo_case=demo_case,
        speed=float(speed),
        text=text,
        lines=lines,
    )
