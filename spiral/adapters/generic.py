"""The generic format for agents without their own: one tool call a line.

`{"tool": "Bash", "command": "..."}`, `{"tool": "Edit", "path": "..."}`,
optionally `"is_error": true`. The line is the whole call, its result
included (`result_seen` at once); it may also carry `"exit_code": N` (a
non-zero one is an error), `"output": "..."` (kept as an excerpt) and
`"denied": true` (refused by the agent's permission layer, an error too).
"""

from __future__ import annotations

from typing import Any

from spiral.adapters.base import Adapter
from spiral.model import ToolCall


class GenericAdapter(Adapter):
    format_name = "generic"

    def feed(self, ts: float, data: Any) -> list[ToolCall]:
        if not isinstance(data, dict) or not isinstance(data.get("tool"), str):
            self.skipped += 1
            return []
        call = self.call(ts, data["tool"], command=data.get("command"), path=data.get("path"), cwd=data.get("cwd"))
        call.result_seen = True
        call.denied = data.get("denied") is True
        code = data.get("exit_code")
        if type(code) is int:
            call.exit_code = code
        out = data.get("output")
        if isinstance(out, str):
            call.output = out
        call.is_error = data.get("is_error") is True or call.denied or bool(call.exit_code)
        return [call]
