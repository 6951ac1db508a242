"""How a run's agent is given its guidance inbox at launch: the three delivery paths.

- **Claude Code** (`claude hook`): `--settings` with a PostToolUse and a PostToolUseFailure hook whose
  command is ours (orchestrator/guidance/hook.py). Nothing is written into the clone or the user's
  settings; the hook lives on this run's argv only.
- **Codex** (`codex hook`): `-c hooks.PostToolUse=[...]` with the same command, `--enable hooks`, and
  `--dangerously-bypass-hook-trust`: Codex runs a hook only once a person has trusted it, and nobody is
  there to, so this invocation skips that review (for every hook it loads; README says so).
- **Any other agent** (`inbox file`): `$ORCHESTRATOR_GUIDANCE_DIR` names the inbox; the agent claims
  messages by rename at its own turn boundaries (orchestrator/guidance/inbox.py has the protocol).

A profile says which with `guidance: hook | inbox | none`; by default a `claude` or `codex` command
gets the hook, any other command the inbox, and `none` refuses `nudge` for its runs.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from orchestrator.guidance.inbox import ENV

MODES = ("hook", "inbox", "none")
CLAUDE_HOOK, CODEX_HOOK, INBOX_FILE = "claude hook", "codex hook", "inbox file"
_HOOK_AGENTS = {"claude": CLAUDE_HOOK, "codex": CODEX_HOOK}


def _program(argv: list[str]) -> str:
    return Path(argv[0]).name if argv else ""


def path_for(argv: list[str], mode: str | None) -> str | None:
    """The delivery path a run of this command gets (None: it takes no guidance)."""
    if mode == "none":
        return None
    hooked = _HOOK_AGENTS.get(_program(argv))
    if mode == "inbox" or (mode is None and hooked is None):
        return INBOX_FILE
    if hooked is None:  # `guidance: hook` on a command that is neither CLI
        raise ValueError(f"guidance: hook needs a claude or codex command, not {_program(argv)!r}")
    return hooked


def hook_command(gdir: Path, agent: str) -> str:
    """The shell line the CLI runs after each tool call (both CLIs run hooks through a shell)."""
    return " ".join(shlex.quote(p) for p in (sys.executable, "-m", "orchestrator.guidance.hook", str(gdir), agent))


def _insert(argv: list[str], extra: list[str]) -> list[str]:
    """Options go before the profile's closing `--` (or at its end): never where the prompt goes."""
    if "--" in argv:
        i = argv.index("--")
        return [*argv[:i], *extra, *argv[i:]]
    return [*argv, *extra]


def wire(argv: list[str], env: dict[str, str], path: str | None, gdir: Path) -> tuple[list[str], dict[str, str]]:
    """The profile's argv (before the prompt is added) and env, extended for the delivery path."""
    if path is None:
        return argv, env
    env = {**env, ENV: str(gdir)}
    if path == CLAUDE_HOOK:
        group = [{"matcher": "*", "hooks": [{"type": "command", "command": hook_command(gdir, "claude")}]}]
        settings = {"hooks": {"PostToolUse": group, "PostToolUseFailure": group}}
        return _insert(argv, ["--settings", json.dumps(settings)]), env
    if path == CODEX_HOOK:
        # a TOML value: a JSON string is a valid TOML basic string
        cmd = json.dumps(hook_command(gdir, "codex"))
        value = f'hooks.PostToolUse=[{{matcher="*",hooks=[{{type="command",command={cmd}}}]}}]'
        return _insert(argv, ["--enable", "hooks", "--dangerously-bypass-hook-trust", "-c", value]), env
    return argv, env
