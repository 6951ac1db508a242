"""Claude Code logs: `--output-format stream-json` and on-disk transcripts.

Both carry Anthropic messages: `assistant` lines hold `tool_use` blocks (one
line per content block, usage repeated, so calls are counted by block id),
`user` lines hold `tool_result` blocks that are joined back to their call.
Transcripts add bookkeeping lines that carry no tool calls.

A call made inside a subagent carries the subagent's id in `agent`
(stream-json: `parent_tool_use_id`; transcripts: sidechain lines with
`agentId`). A `BashOutput` / `TaskOutput` call carries the id of the task it
reads (`bash_id` / `task_id`) as its command.

A result fills in its call: `result_seen`, `is_error`, an `output` excerpt,
the exit code of a failed Bash call (its result reads `Exit code N\n...`; a
successful one has none), and `denied` when the text is one of Claude Code's
refusals (2.1.x, observed): `This command requires approval`, `Claude
requested permissions to write to <path>, but you haven't granted it yet.`,
`<cmd> in '<path>' was blocked. For security, Claude Code may only create or
modify files in the allowed working directories ...`, and a person's "no" at
the permission prompt (`The user doesn't want to proceed with this tool
use...`), and a parallel call Claude Code cancelled because its sibling
failed (`<tool_use_error>Sibling tool call errored</tool_use_error>`: it
never ran). stream-json's final `result` line lists `permission_denials`
(`tool_use_id`s): those calls are marked denied too, while still remembered.
"""

from __future__ import annotations

import re
from sys import intern
from typing import Any

from mypy_extensions import mypyc_attr

from spiral.adapters.base import TOOL_NAMES, Adapter, IdMemory, list_at, str_at
from spiral.model import ToolCall, cut
from spiral.paths import relativize

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
_TASK_READERS = frozenset({"BashOutput", "TaskOutput"})
_DENIED_PREFIXES = (
    "This command requires approval",
    "Claude requested permissions to ",
    "The user doesn't want to ",
)
_DENIED_BLOCKED = " was blocked. For security, Claude Code may only "
# a parallel call cancelled because another call of the same message failed: it never ran
_SIBLING = "<tool_use_error>Sibling tool call errored"
_EXIT = re.compile(r"Exit code (-?\d{1,9})$", re.M)  # bounded: int() of a 5000-digit "code" raises


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class ClaudeAdapter(Adapter):
    format_name = "claude"

    def __init__(self, workdir: str | None = None) -> None:
        super().__init__(workdir)
        self._calls = IdMemory()

    def feed(self, ts: float, data: Any) -> list[ToolCall]:
        """Adapter.feed's guard, with the kinds of nearly every line tested first (the replay hot path)."""
        if type(data) is not dict:
            self.skipped += 1
            return []
        kind = data.get("type")
        if kind == "assistant":
            return self._assistant(ts, data)
        if kind == "user":
            self._results(data)
            return []
        if kind == "stream_event":  # --include-partial-messages: token deltas, nothing to join
            return []
        if kind is None or type(kind) is str:
            return self.dispatch(ts, kind, data)
        self.skipped += 1
        return []

    def dispatch(self, ts: float, kind: str | None, data: dict[str, Any]) -> list[ToolCall]:
        if kind == "assistant":
            return self._assistant(ts, data)
        if kind == "user":
            self._results(data)
            return []
        if kind == "result":
            self._denials(list_at(data, "permission_denials"))
            return []
        if kind == "system" and data.get("subtype") == "api_retry":
            self.provider_retries += 1
        elif kind not in _NO_TOOLS:
            self.skipped += 1
        return []

    def _assistant(self, ts: float, data: dict[str, Any]) -> list[ToolCall]:
        message = data.get("message")
        if type(message) is not dict:
            self.skipped += 1
            return []
        content = message.get("content")
        if type(content) is not list:
            return []
        out: list[ToolCall] = []
        for block in content:
            if type(block) is not dict or block.get("type") != "tool_use":
                continue
            block_id = block.get("id")
            if type(block_id) is not str:
                block_id = None
            name = block.get("name")
            if type(name) is not str:
                self.skipped += 1
                continue
            if block_id is not None and block_id in self._calls:
                continue  # the same call repeated on another line of the message
            if not out:
                cwd, agent = str_at(data, "cwd"), _subagent(data)
                if cwd is not None:
                    cwd = intern(cwd)  # one string for every call in the folder, not one per line parsed
            inp = block.get("input")
            if type(inp) is not dict:
                inp = {}
            path = None
            for key in _PATH_KEYS:
                path = inp.get(key)
                if type(path) is str:
                    break
                path = None
            command = inp.get("command")
            if type(command) is not str:
                command = None
                if name in _TASK_READERS:  # which background task it reads
                    command = str_at(inp, "bash_id") or str_at(inp, "task_id") or str_at(inp, "shell_id")
            call = ToolCall(
                ts,
                TOOL_NAMES.get(name, name),
                command,
                relativize(path, self.workdir, cwd) if path else None,
                call_id=block_id,
                cwd=cwd,
                agent=agent,
            )
            if block_id is not None:
                self._calls.put(block_id, call)
            out.append(call)
        return out

    def _results(self, data: dict[str, Any]) -> None:
        message = data.get("message")
        if type(message) is not dict:
            self.skipped += 1
            return
        content = message.get("content")
        if type(content) is not list:
            return  # a prompt (a string), or nothing to join
        for block in content:
            if type(block) is dict and block.get("type") == "tool_result":
                tid = block.get("tool_use_id")
                call = self._calls.get(tid) if type(tid) is str else None
                if call is not None:
                    _result(call, block)

    def _denials(self, denials: list[Any] | None) -> None:
        if not denials:
            return
        for d in denials:
            tid = str_at(d, "tool_use_id") if type(d) is dict else None
            call = self._calls.get(tid) if tid is not None else None
            if call is not None:
                call.denied = call.is_error = call.result_seen = True


def _subagent(data: dict[str, Any]) -> str | None:
    """The subagent a line comes from: stream-json's `parent_tool_use_id` (the Task call that
    started it), or a transcript's sidechain line (`isSidechain`, `agentId`)."""
    parent = str_at(data, "parent_tool_use_id")
    if parent:
        return parent
    if data.get("isSidechain") is True:
        return str_at(data, "agentId") or "subagent"
    return None


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
        call.output_ends = cut(text)  # what `call.output = text` keeps
    if block.get("is_error") is not True:
        return
    call.is_error = True
    if text is None:
        return
    if _SIBLING in text[:200]:
        call.denied = True  # cancelled with a failed parallel sibling: it never ran (whatever exit code it shows)
        return
    exit_code = _EXIT.match(text)
    if exit_code:
        call.exit_code = int(exit_code[1])
    elif text.startswith(_DENIED_PREFIXES) or _DENIED_BLOCKED in text[:600]:
        call.denied = True
