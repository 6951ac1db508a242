"""Shared plumbing for log adapters: the payload guard, typed field access, tool names, id memory, paths.

A log line can hold anything (a hostile world: a `type` that is a list, a
message that is a number, ids that are objects). `Adapter.feed` is the one
guard: a payload that is not a JSON object, or whose `type` is not a string,
is skipped and counted before any format code sees it; the formats read
every nested field through the typed accessors below (`str_at`, `dict_at`,
`list_at`, `int_at`), which answer None for a value of the wrong type, so no
unhashable, unprintable or non-iterable value reaches a set, a format string
or a loop. A line that is not understood is counted in `skipped`, never fatal.
"""

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


# ---- typed field access: the value when it has the type, else None ------------------------


def str_at(d: dict[str, Any], key: str) -> str | None:
    v = d.get(key)
    return v if type(v) is str else None


def dict_at(d: dict[str, Any], key: str) -> dict[str, Any] | None:
    v = d.get(key)
    return v if type(v) is dict else None


def list_at(d: dict[str, Any], key: str) -> list[Any] | None:
    v = d.get(key)
    return v if type(v) is list else None


def int_at(d: dict[str, Any], key: str) -> int | None:
    """An integer (a bool is not one)."""
    v = d.get(key)
    return v if type(v) is int else None


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
    kind_key: str | None = "type"  # the field the format dispatches on (checked to be a string), if any

    def __init__(self, workdir: str | None = None) -> None:
        self.workdir = workdir.rstrip("/") if workdir else None
        self.skipped = 0  # payloads that were not understood
        self.provider_retries = 0  # the CLI's own "retrying the model API" lines (spiral/outcome.py reads them)

    def feed(self, ts: float, data: Any) -> list[ToolCall]:
        """The one guard: a payload that is not an object, or whose kind is not a string, is skipped."""
        if type(data) is not dict:
            self.skipped += 1
            return []
        key = self.kind_key
        if key is None:
            return self.dispatch(ts, None, data)
        kind = data.get(key)
        if kind is None or type(kind) is str:
            return self.dispatch(ts, kind, data)
        self.skipped += 1
        return []

    def dispatch(self, ts: float, kind: str | None, data: dict[str, Any]) -> list[ToolCall]:
        """One payload that is an object whose kind is a string (or absent)."""
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
