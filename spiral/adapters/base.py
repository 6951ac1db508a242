"""Shared plumbing for log adapters: tool-name normalisation, id memory, paths."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from spiral import model
from spiral.model import ToolCall
from spiral.paths import relativize

# Agent vocabularies, old and new, onto the canonical names in spiral.model.
TOOL_NAMES = {
    "Bash": model.BASH,
    "bash": model.BASH,
    "shell": model.BASH,
    "local_shell": model.BASH,
    "exec_command": model.BASH,
    "command_execution": model.BASH,
    "BashOutput": model.BASH_OUTPUT,
    "TaskOutput": model.BASH_OUTPUT,
    "KillBash": model.KILL_SHELL,
    "KillShell": model.KILL_SHELL,
    "TaskStop": model.KILL_SHELL,
    "Task": model.AGENT,
    "Agent": model.AGENT,
    "Read": model.READ,
    "NotebookRead": model.READ,
    "read": model.READ,
    "Edit": model.EDIT,
    "MultiEdit": model.EDIT,
    "NotebookEdit": model.EDIT,
    "edit": model.EDIT,
    "Write": model.WRITE,
    "write": model.WRITE,
}

_MEMORY = 8192  # ids remembered for de-duplication and result joining


def canonical_tool(name: str) -> str:
    return TOOL_NAMES.get(name, name)


class IdMemory:
    """A bounded id -> ToolCall map: recent calls, so results can be joined."""

    def __init__(self, size: int = _MEMORY) -> None:
        self._items: OrderedDict[str, ToolCall | None] = OrderedDict()
        self._size = size

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def put(self, key: str, call: ToolCall | None) -> None:
        self._items[key] = call
        if len(self._items) > self._size:
            self._items.popitem(last=False)

    def get(self, key: str) -> ToolCall | None:
        return self._items.get(key)


class Adapter:
    """Turns native log payloads into ToolCalls, one payload at a time."""

    format_name = "base"

    def __init__(self, workdir: str | None = None) -> None:
        self.workdir = workdir.rstrip("/") if workdir else None
        self.skipped = 0  # payloads that were not understood
        self.provider_retries = 0  # the CLI's own "retrying the model API" lines (spiral/outcome.py reads them)

    def feed(self, ts: float, data: Any) -> list[ToolCall]:
        raise NotImplementedError

    def rel(self, path: Any, cwd: str | None = None) -> str | None:
        if not isinstance(path, str) or not path:
            return None
        return relativize(path, self.workdir, cwd)

    def call(
        self,
        ts: float,
        tool: str,
        *,
        command: Any = None,
        path: Any = None,
        call_id: str | None = None,
        cwd: Any = None,
    ) -> ToolCall:
        cwd_s = cwd if isinstance(cwd, str) else None
        return ToolCall(
            ts=ts,
            tool=canonical_tool(tool),
            command=command if isinstance(command, str) else None,
            path=self.rel(path, cwd_s),
            call_id=call_id,
            cwd=cwd_s,
        )
