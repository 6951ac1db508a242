"""Codex logs: `codex exec --json` events, and the on-disk rollout files.

exec --json: `item.started` / `item.completed` for `command_execution` and
`file_change` items (commands wrapped as `/bin/bash -lc '...'`).
Rollouts: `response_item` records whose payload is a `function_call`
(`shell` with an argv list and a workdir, `exec_command`, `apply_patch`) and
a matching `function_call_output`; the legacy format has those at top level.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import orjson

from spiral.adapters.base import Adapter, IdMemory
from spiral.model import ToolCall

_EXEC_KNOWN = frozenset({"thread.started", "turn.started", "turn.completed", "turn.failed", "error"})
_ITEM_SILENT = frozenset({"reasoning", "agent_message", "todo_list", "error"})
_ROLLOUT_KNOWN = frozenset({"session_meta", "turn_context", "event_msg", "compacted", "message", "reasoning", "state"})
_PAYLOAD_SILENT = frozenset({"message", "reasoning", "web_search_call", "other"})
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.M)


class CodexAdapter(Adapter):
    format_name = "codex-json"

    def __init__(self, workdir: str | None = None) -> None:
        super().__init__(workdir)
        self._calls = IdMemory()
        self._cwd: str | None = None

    def feed(self, ts: float, data: Any) -> list[ToolCall]:
        if not isinstance(data, dict):
            self.skipped += 1
            return []
        kind = data.get("type")
        if isinstance(kind, str) and kind.startswith("item."):
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
            payload = data.get("payload")
            if isinstance(payload, dict) and isinstance(payload.get("cwd"), str):
                self._cwd = payload["cwd"]
            return []
        if kind in _EXEC_KNOWN or kind in _ROLLOUT_KNOWN or "record_type" in data:
            return []
        if kind is None and ("instructions" in data or "id" in data):
            return []  # the legacy rollout's header line
        self.skipped += 1
        return []

    # ---- codex exec --json -------------------------------------------------

    def _item(self, ts: float, kind: str, item: Any) -> list[ToolCall]:
        if not isinstance(item, dict):
            self.skipped += 1
            return []
        itype, iid = item.get("type"), item.get("id")
        key = f"item:{iid}"
        if itype == "command_execution":
            call = self._calls.get(key)
            if call is None and key not in self._calls:
                call = self.call(ts, "command_execution", command=item.get("command"), call_id=str(iid))
                self._calls.put(key, call)
                out = [call]
            else:
                out = []
            code = item.get("exit_code")
            if call is not None and isinstance(code, int) and code != 0:
                call.is_error = True
            return out
        if itype == "file_change":
            if key in self._calls:
                return []
            self._calls.put(key, None)
            changes = item.get("changes")
            out = []
            for ch in changes if isinstance(changes, list) else []:
                if isinstance(ch, dict) and isinstance(ch.get("path"), str):
                    tool = "Write" if ch.get("kind") == "add" else "Edit"
                    out.append(self.call(ts, tool, path=ch["path"], call_id=str(iid)))
            return out
        if itype == "mcp_tool_call":
            if key in self._calls:
                return []
            self._calls.put(key, None)
            return [self.call(ts, f"mcp:{item.get('server')}.{item.get('tool')}", call_id=str(iid))]
        if itype == "web_search":
            if key in self._calls:
                return []
            self._calls.put(key, None)
            return [self.call(ts, "WebSearch", call_id=str(iid))]
        if itype not in _ITEM_SILENT:
            self.skipped += 1
        return []

    # ---- rollout files -----------------------------------------------------

    def _payload(self, ts: float, p: Any) -> list[ToolCall]:
        if not isinstance(p, dict):
            self.skipped += 1
            return []
        ptype = p.get("type")
        if ptype in ("function_call", "custom_tool_call", "local_shell_call"):
            return self._function_call(ts, p)
        if ptype in ("function_call_output", "custom_tool_call_output"):
            self._function_output(p)
            return []
        if ptype not in _PAYLOAD_SILENT:
            self.skipped += 1
        return []

    def _function_call(self, ts: float, p: dict[str, Any]) -> list[ToolCall]:
        name = p.get("name") or p.get("type")
        call_id = p.get("call_id") if isinstance(p.get("call_id"), str) else None
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
            if isinstance(cmd, list):
                cmd = shlex.join(str(c) for c in cmd)
            cwd = argd.get("workdir") or self._cwd
            calls = [self.call(ts, "shell", command=cmd, call_id=call_id, cwd=cwd)]
        elif name == "apply_patch":
            text = args if isinstance(args, str) else (args or {}).get("input", "") if isinstance(args, dict) else ""
            calls = [
                self.call(ts, "Write" if verb == "Add" else "Edit", path=path.strip(), call_id=call_id, cwd=self._cwd)
                for verb, path in _PATCH_FILE.findall(text if isinstance(text, str) else "")
            ]
        else:
            calls = [self.call(ts, str(name), call_id=call_id)]
        if call_id and calls:
            self._calls.put(call_id, calls[0])
        return calls

    def _function_output(self, p: dict[str, Any]) -> None:
        call = self._calls.get(p["call_id"]) if isinstance(p.get("call_id"), str) else None
        if call is None:
            return
        out = p.get("output")
        if isinstance(out, str) and out.startswith("{"):
            try:
                out = orjson.loads(out)
            except orjson.JSONDecodeError:
                return
        meta = out.get("metadata") if isinstance(out, dict) else None
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        if isinstance(code, int) and code != 0:
            call.is_error = True
