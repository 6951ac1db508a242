"""Claude Code logs: `--output-format stream-json` and on-disk transcripts.

Both carry Anthropic messages: `assistant` lines hold `tool_use` blocks (one
line per content block, usage repeated, so calls are counted by block id),
`user` lines hold `tool_result` blocks that are joined back to their call.
Transcripts add bookkeeping lines that carry no tool calls.
"""

from __future__ import annotations

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
        if kind not in _NO_TOOLS:
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
                if call is not None and block.get("is_error") is True:
                    call.is_error = True
