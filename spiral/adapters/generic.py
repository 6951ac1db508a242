"""The generic format for agents without their own: one tool call a line.

`{"tool": "Bash", "command": "..."}`, `{"tool": "Edit", "path": "..."}`,
optionally `"is_error": true`. The line is the whole call, its result
included (`result_seen` at once); it may also carry `"exit_code": N` (a
non-zero one is an error), `"output": "..."` (kept as an excerpt) and
`"denied": true` (refused by the agent's permission layer, an error too).
"""

from __future__ import annotations

from typing import Any

from mypy_extensions import mypyc_attr

from spiral.adapters.base import Adapter, int_at, str_at
from spiral.model import ToolCall


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class GenericAdapter(Adapter):
    format_name = "generic"
    kind_key: str | None = None  # a line is a call when its `tool` is a string; `type` means nothing here

    def dispatch(self, ts: float, kind: str | None, data: dict[str, Any]) -> list[ToolCall]:
        tool = str_at(data, "tool")
        if tool is None:
            self.skipped += 1
            return []
        call = self.call(ts, tool, command=str_at(data, "command"), path=str_at(data, "path"), cwd=str_at(data, "cwd"))
        call.result_seen = True
        call.denied = data.get("denied") is True
        call.exit_code = int_at(data, "exit_code")
        out = str_at(data, "output")
        if out is not None:
            call.output = out
        call.is_error = data.get("is_error") is True or call.denied or bool(call.exit_code)
        return [call]
