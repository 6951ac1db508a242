"""How a ticket's agent is started: its argv, log format, prompt mode and environment, checked for
what the operating system would refuse before any run exists (orchestrator/runs/launch.py uses it)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

from orchestrator.config import UserConfig
from orchestrator.guidance import wiring
from orchestrator.infra.errors import UserError
from orchestrator.record.case import load_case
from orchestrator.runs import tickets

MAX_ARG_BYTES = 128 * 1024  # Linux's limit on one argument (MAX_ARG_STRLEN), its final NUL included
MAX_STDIN_PROMPT_CHARS = 4 * 2**20  # a prompt on stdin (a 300 MB one made every status take 4.5 s)


@dataclass
class AgentCommand:
    """How the ticket's agent is started: argv, log format, prompt mode, its environment."""

    argv: list[str]
    format: str
    prompt_mode: str
    version_command: list[str]
    env: dict[str, str]
    install_hint: str | None = None
    guidance_via: str | None = None  # how the agent takes guidance (orchestrator/guidance/wiring.py)


def agent_command(ticket: tickets.Ticket, cfg: UserConfig, guidance_dir: Path | None = None) -> AgentCommand:
    """How the agent is started; with `guidance_dir` (the run's), wired to take guidance there."""
    profile = cfg.profiles[ticket.agent]
    if ticket.agent == "demo":
        assert ticket.demo_case is not None
        fmt = load_case(ticket.demo_case).format
        argv = [sys.executable, "-P", "-m", "orchestrator.demo.agent", "--case", str(ticket.demo_case)]
        env: dict[str, str] = {}
        if guidance_dir is not None:  # the demo agent reads its inbox at each step it re-enacts
            argv, env = wiring.wire(argv, env, wiring.INBOX_FILE, guidance_dir)
        via = wiring.INBOX_FILE if guidance_dir is not None else None
        return AgentCommand([*argv, "--speed", repr(ticket.speed)], fmt, "none", [], env, guidance_via=via)
    env = {**profile.env, **(profile.root_env if os.geteuid() == 0 else {})}
    argv = list(profile.command)
    via = wiring.path_for(argv, profile.guidance)
    if guidance_dir is not None:
        argv, env = wiring.wire(argv, env, via, guidance_dir)
    if profile.prompt == "argument":
        if ticket.body.lstrip().startswith("-") and (not argv or argv[-1] != "--"):
            raise UserError(
                f"{ticket.path}: the ticket body starts with '-', which agent {ticket.agent!r} would read as an "
                f"option; end the profile's command with '--' or set prompt: stdin"
            )
        size = len(ticket.body.encode("utf-8", errors="surrogateescape")) + 1
        if size > MAX_ARG_BYTES:
            raise UserError(
                f"{ticket.path}: the ticket body is {size // 1024} KiB, and agent {ticket.agent!r} takes it as one "
                f"argument, which Linux caps at {MAX_ARG_BYTES // 1024} KiB: shorten it (put the details in a file "
                f"the agent can read), or set the profile's prompt: stdin"
            )
        argv.append(ticket.body)
    elif len(ticket.body) > MAX_STDIN_PROMPT_CHARS:  # the record keeps the prompt: every pass reads it
        raise UserError(
            f"{ticket.path}: the ticket body is {len(ticket.body) // 2**20} MiB; a prompt is at most "
            f"{MAX_STDIN_PROMPT_CHARS // 2**20} MiB: put the material in a file the agent can read"
        )
    _refuse_nul(ticket, argv, env)
    return AgentCommand(
        argv,
        profile.format,
        profile.prompt,
        list(profile.version_command),
        env,
        profile.install_hint,
        guidance_via=via if guidance_dir is not None else None,
    )


def _refuse_nul(ticket: tickets.Ticket, argv: list[str], env: dict[str, str]) -> None:
    """The operating system refuses a NUL byte in an argument or in the environment: refused here, before
    a run exists, rather than as a supervisor error after `launch` said the run started."""
    if any("\x00" in a for a in argv):
        where = (
            "the ticket body" if argv and argv[-1] == ticket.body and "\x00" in ticket.body else "the agent's command"
        )
        raise UserError(
            f"{ticket.path}: {where} holds a NUL byte, which no program can take as an argument "
            f"(agent {ticket.agent!r}); remove it, or set the profile's prompt: stdin"
        )
    bad = next((k for k, v in env.items() if "\x00" in k or "\x00" in v), None)
    if bad is not None:
        raise UserError(
            f"agent {ticket.agent!r}: its environment variable {bad.replace(chr(0), '?')!r} holds a NUL byte"
        )
