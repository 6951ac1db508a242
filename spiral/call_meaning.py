"""What a call is, as the windows count it: worked out once per distinct call (pure)."""

from __future__ import annotations

import re

from spiral import model
from spiral.attempts import EDIT_INTENT, SEARCH_INTENT
from spiral.call_windows import Meaning, is_request
from spiral.intent import Intent, intent, searches
from spiral.model import ToolCall
from spiral.observe import SHELL_LIKE, norm_path, observe
from spiral.settings import Settings
from spiral.shellwrites import writes
from spiral.signals import repetition, sustained_bash

_MOVES_HEAD = re.compile(
    r"\bgit\s+(?:-\S+\s+)*(?:commit|stash|reset|rebase|merge|pull|am|cherry-pick|revert|checkout\s+-b)\b"
)


def meaning_of(call: ToolCall, settings: Settings, workdir: str | None, tracked: frozenset[str]) -> Meaning:
    obs = observe(call, workdir, settings.poll_max_sleep_s)
    shell = call.tool == model.BASH and bool(call.command)
    tried = intent(call.command or "") if shell and settings.rules.stuck_check else None
    if tried is None and settings.rules.stuck_check:
        if shell and searches(call.command or ""):
            tried = Intent(SEARCH_INTENT, None)
        elif call.tool in model.WRITING_TOOLS and obs.file:
            tried = Intent(EDIT_INTENT + obs.file, None)
    changed = writes(call.command or "") if shell and settings.rules.shell_edits else None
    return Meaning(
        repetition.script_key(obs, tracked),
        repetition.file_key(obs),
        # with outcomes judged, a whole-suite test run is a target too: its progress reruns do not count
        sustained_bash.key(obs) or (obs.suite if settings.rules.outcomes else None),
        obs.tool in SHELL_LIKE,
        obs.poll,
        obs.file,
        is_request(call.tool, call.command),
        bool(call.command and call.tool == model.BASH and _MOVES_HEAD.search(call.command)),
        tried.key if tried is not None else None,
        norm_path(tried.script, workdir, call.cwd) if tried is not None else None,
        changed if changed is not None and changed.any else None,
        tried is not None and tried.exit_masked,
        tried is not None and tried.output_picked,
    )
