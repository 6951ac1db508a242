"""The generic format for agents without their own: one tool call a line.

`{"tool": "Bash", "command": "..."}`, `{"tool": "Edit", "path": "..."}`,
optionally `"is_error": true`.
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
        call.is_error = data.get("is_error") is True
        return [call]
