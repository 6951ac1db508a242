"""Claude Code logs: `--output-format stream-json` and on-disk transcripts.

Both carry Anthropic messages: `assistant` lines hold `tool_use` blocks (one
line per content block, usage repeated, so calls are counted by block id),
`user` lines hold `tool_result` blocks that are joined back to their call.
Transcripts add bookkeeping lines that carry no tool calls.

A result fills in its call: `result_seen`, `is_error`, an `output` excerpt,
the exit code of a failed Bash call (its result reads `Exit code N\n...`; a
successful one has none), and `denied` when the text is one of Claude Code's
refusals (2.1.x, observed): `This command requires approval`, `Claude
requested permissions to write to <path>, but you haven't granted it yet.`,
`<cmd> in '<path>' was blocked. For security, Claude Code may only create or
modify files in the allowed working directories ...`, and a person's "no" at
the permission prompt (`The user doesn't want to proceed with this tool
use...`). stream-json's final `result` line lists `permission_denials`
(`tool_use_id`s): those calls are marked denied too, while still remembered.
"""

from __future__ import annotations

import re
from typing import Any

from spiral.adapters.base import Adapter, IdMemory
from spiral.model import ToolCall

_NO_TOOLS = frozenset(
    {
        "system",
        "result",
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "summary",
        "last-prompt",
        "stream_event",
        "control_request",
        "control_response",
        "keep_alive",
        "rate_limit_event",
        "attachment",
        "custom-title",
        "tag",
        "agent-name",
        "pr-link",
    }
)
_PATH_KEYS = ("file_path", "notebook_path", "path")
_DENIED_PREFIXES = (
    "This command requires approval",
    "Claude requested permissions to ",
    "The user doesn't want to ",
)
_DENIED_BLOCKED = " was blocked. For security, Claude Code may only "
_EXIT = re.compile(r"Exit code (-?\d+)$", re.M)


class ClaudeAdapter(Adapter):
    format_name = "claude"

    def __init__(self, workdir: str | None = None) -> None:
        super().__init__(workdir)
        self._calls = IdMemory()

    def feed(self, ts: float, data: Any) -> list[ToolCall]:
        if not isinstance(data, dict):
            self.skipped += 1
            return []
        kind = data.get("type")
        if kind == "assistant":
            return self._assistant(ts, data)
        if kind == "user":
            self._results(data)
            return []
        if kind == "result":
            self._denials(data.get("permission_denials"))
            return []
        if kind == "system" and data.get("subtype") == "api_retry":
            self.provider_retries += 1
        elif kind not in _NO_TOOLS:
            self.skipped += 1
        return []

    def _assistant(self, ts: float, data: dict[str, Any]) -> list[ToolCall]:
        message = data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            if message is None:
                self.skipped += 1
            return []
        cwd = data.get("cwd")
        out = []
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_use":
                continue
            block_id = block.get("id")
            name = block.get("name")
            if not isinstance(name, str):
                self.skipped += 1
                continue
            if isinstance(block_id, str):
                if block_id in self._calls:
                    continue  # the same call repeated on another line of the message
            inp = block.get("input")
            if not isinstance(inp, dict):
                inp = {}
            path = None
            for key in _PATH_KEYS:
                if key in inp and isinstance(inp[key], str):
                    path = inp[key]
                    break
            call = self.call(
                ts,
                name,
                command=inp.get("command"),
                path=path,
                call_id=block_id if isinstance(block_id, str) else None,
                cwd=cwd,
            )
            if isinstance(block_id, str):
                self._calls.put(block_id, call)
            out.append(call)
        return out

    def _results(self, data: dict[str, Any]) -> None:
        message = data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                tid = block.get("tool_use_id")
                call = self._calls.get(tid) if isinstance(tid, str) else None
                if call is not None:
                    _result(call, block)

    def _denials(self, denials: Any) -> None:
        if not denials or not isinstance(denials, list):
            return
        for d in denials:
            tid = d.get("tool_use_id") if isinstance(d, dict) else None
            call = self._calls.get(tid) if isinstance(tid, str) else None
            if call is not None:
                call.denied = call.is_error = call.result_seen = True


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: text, images...
        return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return None


def _result(call: ToolCall, block: dict[str, Any]) -> None:
    call.result_seen = True
    text = _text(block.get("content"))
    if text is not None:
        call.output = text
    if block.get("is_error") is not True:
        return
    call.is_error = True
    if text is None:
        return
    exit_code = _EXIT.match(text)
    if exit_code:
        call.exit_code = int(exit_code[1])
    elif text.startswith(_DENIED_PREFIXES) or _DENIED_BLOCKED in text[:600]:
        call.denied = True
