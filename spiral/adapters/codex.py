"""Codex logs: `codex exec --json` events, and the on-disk rollout files.

exec --json: `item.started` / `item.completed` for `command_execution` and
`file_change` items (commands wrapped as `/bin/bash -lc '...'`).
Rollouts: `response_item` records whose payload is a `function_call`
(`shell` with an argv list and a workdir, `exec_command`, `apply_patch`) and
a matching `function_call_output`; the legacy format has those at top level.

Result facts, set on the call when its result arrives:
- exec --json: an item in a final state (`completed`, `failed`, `declined`:
  the approval was refused, so `denied`) or with an integer `exit_code`; a
  command's `aggregated_output` is the output. A `file_change` or MCP item
  that `failed` is an error. (A command the read-only sandbox blocks may
  never appear as an item at all: nothing to join.)
- rollouts: the output's JSON `metadata.exit_code` (older versions), or the
  text's `Process exited with code N` (exec_command, 0.171), `Exit code: N`
  (apply_patch, 0.171), `..., exit code: N, ...` (a failure in the old
  sandbox wrapper, despite its "sandbox denied" wording an ordinary failure);
  `patch rejected...` (the read-only sandbox or a refused approval) is
  `denied`; `error: ...` and `tool call error: ...` are errors.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import orjson
from mypy_extensions import mypyc_attr

from spiral.adapters.base import Adapter, IdMemory, dict_at, int_at, list_at, str_at
from spiral.model import ToolCall

_EXEC_KNOWN = frozenset({"thread.started", "turn.started", "turn.completed", "turn.failed", "error"})
_ITEM_SILENT = frozenset({"reasoning", "agent_message", "todo_list", "error"})
_ROLLOUT_KNOWN = frozenset({"session_meta", "turn_context", "event_msg", "compacted", "message", "reasoning", "state"})
_PAYLOAD_SILENT = frozenset({"message", "reasoning", "web_search_call", "other"})
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)
# the command starts with apply_patch, maybe inside `bash -lc '...'` (anchored, no re.M: linear on any command)
_SHELL_PATCH = re.compile(r"[^\S\n]*(?:\S*/)?(?:(?:bash|sh|zsh)[ \t]+(?:-\w+[ \t]+)*)?['\"]?[ \t]*apply_patch\b")
_FINAL = frozenset({"completed", "failed", "declined"})
_EXIT = re.compile(r"(?:^Exit code: |\nProcess exited with code |, exit code: )(-?\d+)")
_OUTPUT = "\nOutput:\n"
_HEADERS = ("Chunk ID: ", "Exit code: ")
_FAILED = ("error:", "tool call error:")
_SCALARS = (str, int, float, bool)


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class CodexAdapter(Adapter):
    format_name = "codex-json"

    def __init__(self, workdir: str | None = None) -> None:
        super().__init__(workdir)
        self._calls = IdMemory()
        self._cwd: str | None = None

    def feed(self, ts: float, data: Any) -> list[ToolCall]:
        """Adapter.feed's guard, with the kinds of nearly every rollout line tested first."""
        if type(data) is not dict:
            self.skipped += 1
            return []
        kind = data.get("type")
        if kind == "event_msg":  # token counts, reasoning, messages: known, no tool call
            return []
        if kind == "response_item":
            return self._payload(ts, data.get("payload"))
        if kind is None or type(kind) is str:
            return self.dispatch(ts, kind, data)
        self.skipped += 1
        return []

    def dispatch(self, ts: float, kind: str | None, data: dict[str, Any]) -> list[ToolCall]:
        if kind is not None and kind.startswith("item."):
            return self._item(ts, kind, data.get("item"))
        if kind == "response_item":
            return self._payload(ts, data.get("payload"))
        if kind in (
            "function_call",
            "function_call_output",
            "custom_tool_call",
            "custom_tool_call_output",
            "local_shell_call",
        ):
            return self._payload(ts, data)
        if kind == "session_meta" or kind == "turn_context":
            payload = dict_at(data, "payload")
            cwd = str_at(payload, "cwd") if payload is not None else None
            if cwd is not None:
                self._cwd = cwd
            return []
        if kind in _EXEC_KNOWN or kind in _ROLLOUT_KNOWN or "record_type" in data:
            if kind == "error":
                self.provider_retries += 1
            return []
        if kind is None and ("instructions" in data or "id" in data):
            return []  # the legacy rollout's header line
        self.skipped += 1
        return []

    # ---- codex exec --json -------------------------------------------------

    def _item(self, ts: float, kind: str, item: Any) -> list[ToolCall]:
        if type(item) is not dict:
            self.skipped += 1
            return []
        itype, iid = str_at(item, "type"), item.get("id")
        if iid is not None and type(iid) is not str and type(iid) is not int:
            self.skipped += 1  # an id that is a list, an object...: nothing to join it by
            return []
        key = f"item:{iid}"
        # item.completed: "reached a terminal state"; a status says so too (a file_change may come only completed)
        status = str_at(item, "status")
        final = kind == "item.completed" or status in _FINAL
        if itype == "command_execution":
            call = self._calls.get(key)
            if call is None and key not in self._calls:
                call = self.call(ts, "command_execution", command=str_at(item, "command"), call_id=str(iid))
                self._calls.put(key, call)
                out = [call]
            else:
                out = []
            if call is not None and final:
                _command_done(call, int_at(item, "exit_code"), status, str_at(item, "aggregated_output"))
            return out
        if itype == "file_change":
            if key in self._calls:
                if final:
                    self._item_done(key, item)
                return []
            out = []
            for ch in list_at(item, "changes") or ():
                path = str_at(ch, "path") if type(ch) is dict else None
                if path is not None:
                    tool = "Write" if ch.get("kind") == "add" else "Edit"
                    out.append(self.call(ts, tool, path=path, call_id=str(iid)))
            self._remember(key, out)
            if final or status is None:  # older versions: reported once the patch is applied, no status
                self._item_done(key, item)
            return out
        if itype == "mcp_tool_call" or itype == "web_search":
            if key in self._calls:
                if final:
                    self._item_done(key, item)
                return []
            name = "WebSearch" if itype == "web_search" else f"mcp:{str_at(item, 'server')}.{str_at(item, 'tool')}"
            out = [self.call(ts, name, call_id=str(iid))]
            self._remember(key, out)
            if final:
                self._item_done(key, item)
            return out
        if itype not in _ITEM_SILENT:
            self.skipped += 1
        return []

    def _remember(self, key: str, calls: list[ToolCall]) -> None:
        """The calls of one item or call_id: the first under `key`, the others under `key#n`."""
        self._calls.put(key, calls[0] if calls else None)
        for n, call in enumerate(calls[1:], 1):
            self._calls.put(f"{key}#{n}", call)

    def _joined(self, key: str) -> list[ToolCall]:
        call = self._calls.get(key)
        out = []
        n = 1
        while call is not None:
            out.append(call)
            call = self._calls.get(f"{key}#{n}")
            n += 1
        return out

    def _item_done(self, key: str, item: dict[str, Any]) -> None:
        """A file_change / MCP / web search item's result, once it is final."""
        status = str_at(item, "status")
        failed = status == "failed" or status == "declined"
        error, result = dict_at(item, "error"), dict_at(item, "result")
        text = str_at(error, "message") if error is not None else None
        if text is None and result is not None:  # an MCP result: {"content": [{"type": "text", ...}]}
            text = _texts(result.get("content"))
        for call in self._joined(key):
            call.result_seen = True
            if failed:
                call.is_error = True
                call.denied = status == "declined"
            if text is not None:
                call.output = text

    # ---- rollout files -----------------------------------------------------

    def _payload(self, ts: float, p: Any) -> list[ToolCall]:
        if type(p) is not dict:
            self.skipped += 1
            return []
        ptype = str_at(p, "type")
        if ptype in ("function_call", "custom_tool_call", "local_shell_call"):
            return self._function_call(ts, ptype, p)
        if ptype in ("function_call_output", "custom_tool_call_output"):
            self._function_output(p)
            return []
        if ptype not in _PAYLOAD_SILENT:
            self.skipped += 1
        return []

    def _function_call(self, ts: float, ptype: str, p: dict[str, Any]) -> list[ToolCall]:
        if p.get("name") is not None and str_at(p, "name") is None:
            self.skipped += 1  # a name that is a list, a number...
            return []
        name = str_at(p, "name") or ptype
        call_id = str_at(p, "call_id")
        raw = p.get("arguments") if "arguments" in p else p.get("input", p.get("action"))
        args: Any = raw
        if isinstance(raw, str):
            try:
                args = orjson.loads(raw)
            except orjson.JSONDecodeError:
                args = raw
        if name in ("shell", "local_shell_call", "container.exec", "exec_command"):
            argd = args if isinstance(args, dict) else {}
            cmd = argd.get("command", argd.get("cmd"))
            if type(cmd) is list:  # an argv; words that are not scalars make it unreadable
                words = [c if type(c) is str else str(c) for c in cmd if type(c) in _SCALARS]
                cmd = shlex.join(words) if len(words) == len(cmd) else None
            cwd = argd.get("workdir") or self._cwd
            if (
                isinstance(cmd, str) and "*** Begin Patch" in cmd and _SHELL_PATCH.match(cmd)
            ):  # `apply_patch <<'EOF' ...` run through the shell
                calls = self._patch(ts, cmd, call_id, cwd)
            else:
                calls = [self.call(ts, "shell", command=cmd, call_id=call_id, cwd=cwd)]
        elif name == "apply_patch":
            text = args if isinstance(args, str) else (args or {}).get("input", "") if isinstance(args, dict) else ""
            calls = self._patch(ts, text if isinstance(text, str) else "", call_id, self._cwd)
        else:
            calls = [self.call(ts, name, call_id=call_id)]
        if call_id and calls:
            self._remember(call_id, calls)
        return calls

    def _patch(self, ts: float, text: str, call_id: str | None, cwd: Any) -> list[ToolCall]:
        """One Edit (or Write, for an added file) per file a patch names."""
        return [
            self.call(ts, "Write" if verb == "Add" else "Edit", path=path.strip(), call_id=call_id, cwd=cwd)
            for verb, path in _PATCH_FILE.findall(text)
        ]

    def _function_output(self, p: dict[str, Any]) -> None:
        call_id = str_at(p, "call_id")
        calls = self._joined(call_id) if call_id is not None else []
        if not calls:
            return
        code, text, denied, failed = _output_facts(p.get("output"))
        for call in calls:
            call.result_seen = True
            if text is not None:
                call.output = text
            if code is not None:
                call.exit_code = code
            if failed:
                call.is_error = True
                call.denied = denied


def _command_done(call: ToolCall, code: Any, status: Any, output: Any) -> None:
    call.result_seen = True
    if isinstance(code, int):
        call.exit_code = code
        if code != 0:
            call.is_error = True
    if status == "failed" or status == "declined":
        call.is_error = True
        call.denied = status == "declined"
    if isinstance(output, str):
        call.output = output


def _output_facts(out: Any) -> tuple[int | None, str | None, bool, bool]:
    """(exit code, output text, denied, failed) of one rollout tool output."""
    if isinstance(out, str) and out[:1] in ("{", "["):
        try:
            out = orjson.loads(out)
        except orjson.JSONDecodeError:
            pass
    if isinstance(out, dict):  # {"output": "...", "metadata": {"exit_code": N, ...}}
        meta = dict_at(out, "metadata")
        code = int_at(meta, "exit_code") if meta is not None else None
        return code, str_at(out, "output"), False, code is not None and code != 0
    if isinstance(out, list):  # content items: [{"type": "text", "text": "..."}]
        return None, _texts(out), False, False
    if not isinstance(out, str):
        return None, None, False, False
    if out.startswith("patch rejected"):
        return None, out, True, True
    found = _EXIT.search(out, 0, 200)
    code = int(found[1]) if found else None
    # 0.171's header (chunk, wall time, exit code or "Process running with session ID N") before "Output:"
    body = out.find(_OUTPUT, 0, 300) if out.startswith(_HEADERS) else -1
    text = out[body + len(_OUTPUT) :] if body >= 0 else out
    if code is None:
        return None, text, False, out.startswith(_FAILED)
    return code, text, False, code != 0


def _texts(content: Any) -> str | None:
    if not isinstance(content, list):
        return None
    return "\n".join(x["text"] for x in content if isinstance(x, dict) and isinstance(x.get("text"), str))
