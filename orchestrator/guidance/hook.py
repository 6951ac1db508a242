"""The hook command the orchestrator installs in Claude Code and Codex for a run.

`python -m orchestrator.guidance.hook RUN_GUIDANCE_DIR AGENT`, run by the CLI after each tool call
(Claude Code: PostToolUse and PostToolUseFailure; Codex: PostToolUse). That moment is a turn boundary:
the tool's result is in, the next model request is not sent yet. The hook claims every queued message
(orchestrator/guidance/inbox.py), writes the receipt, and answers with the text as the hook's
`additionalContext`, which both CLIs put into the next model request.

Nothing queued: it prints nothing and exits 0 at once. It never fails the agent's tool call: whatever
goes wrong, it exits 0 (a message it could not hand over stays queued, or is claimed with its receipt).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from orchestrator.guidance import inbox

PREFIX = "Guidance from the person supervising this run (sent with `nudge`):"


def answer(event: str, texts: list[str]) -> str:
    """The hook's stdout: the same shape serves Claude Code and Codex."""
    body = PREFIX + "\n\n" + "\n\n".join(texts)
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": body}})


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: python -m orchestrator.guidance.hook GUIDANCE_DIR AGENT\n")
        return 0
    gdir, agent = Path(argv[1]), argv[2]
    try:
        raw = sys.stdin.buffer.read()  # always read whole: a CLI writing a large tool result must not hit EPIPE
        if not inbox.pending(gdir):
            return 0
        try:
            data = json.loads(raw or b"{}")
        except ValueError:
            data = {}
        if not isinstance(data, dict):
            data = {}
        event = str(data.get("hook_event_name") or "PostToolUse")
        tool = str(data.get("tool_name") or "a tool")
        use_id = data.get("tool_use_id")
        got = inbox.claim_all(gdir, f"{agent} {event} hook after {tool}", str(use_id) if use_id else None)
        if got:
            sys.stdout.write(answer(event, [m.text for m in got]) + "\n")
            sys.stdout.flush()
    except Exception as exc:  # never break the agent's turn
        sys.stderr.write(f"orchestrator guidance hook: {type(exc).__name__}: {exc}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
