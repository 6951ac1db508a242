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

from collections import deque
from typing import Any

from mypy_extensions import mypyc_attr

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

_MEMORY = 8192  # ids back a call still waiting for its result can be joined (IdMemory)
_IDS = 128  # ids remembered for de-duplication (IdMemory: measured need, 0 ids back)
_RESOLVED = 64  # ids back a call whose result is in can still be filled in by a later line


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


def _joinable(age: int, size: int, call: ToolCall) -> bool:
    """Whether a later line may still fill in a call put `age` ids ago (IdMemory's rule, below): a native
    call wherever it is asked (the pruning asks it of every remembered call)."""
    return age < _RESOLVED or (age < size and not call.result_seen)


def _next_prune(kept: int) -> int:
    """The size at which IdMemory next drops what `get` no longer answers with: soon (what is held beyond
    need is held by every live run of a watcher), yet after at least half as many puts again as are
    kept (calls waiting for their results by the thousand cost no more than O(1) a put)."""
    return kept + max(_RESOLVED // 4, kept // 2)


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
class IdMemory:
    """Ids seen (for de-duplication) and the calls a later line may still fill in (to join results).

    Only what a later line can use is kept, so the state stays small however long the run
    (the live watcher pickles it every tick):
    - ids: the last `_IDS` distinct ids, for `in` (a call repeated on another line of its
      message). Measured on every real trace and corpus case, a repeated tool_use comes on
      the very next lines (distance 0 calls); past the cap, an id repeated more than `_IDS`
      ids later would be taken as a new call.
    - calls: a call still waiting for its result stays joinable while it is among the last
      `size` ids (as before); a call whose result is in stays joinable only while it is among
      the last `_RESOLVED` ids (a repeated result, or the result line's `permission_denials`
      marking a call refused under a wording we do not know). Past that, such a late line
      leaves the call as its first result left it. `get` applies this rule whether or not the
      entry was pruned yet, so a pickled memory behaves as one never pickled.
    """

    def __init__(self, size: int = _MEMORY) -> None:
        self._size = size
        self._seq = 0  # ids put so far
        self._ids: set[str] = set()
        self._order: deque[str] = deque()  # the same ids, oldest first
        self._calls: dict[str, tuple[int, ToolCall]] = {}  # key -> (its put number, the call)
        self._prune_at = _next_prune(0)

    def __getstate__(self) -> dict[str, Any]:
        alive = [(k, n, c) for k, (n, c) in self._calls.items() if _joinable(self._seq - n, self._size, c)]
        return {"size": self._size, "seq": self._seq, "ids": list(self._order), "calls": alive}

    def __setstate__(self, state: dict[str, Any]) -> None:
        if not isinstance(state, dict) or "seq" not in state:  # pickled by an older version: a cache to rebuild
            raise TypeError("an IdMemory pickled by another version")
        self._size, self._seq = state["size"], state["seq"]
        self._order = deque(state["ids"][-_IDS:])  # (pickled with a longer memory: the newest count)
        self._ids = set(self._order)
        self._calls = {k: (n, c) for k, n, c in state["calls"]}
        self._prune_at = _next_prune(len(self._calls))

    def __contains__(self, key: str) -> bool:
        return key in self._ids or self.get(key) is not None

    def put(self, key: str, call: ToolCall | None) -> None:
        ids = self._ids
        if key not in ids:
            ids.add(key)
            self._order.append(key)
            if len(ids) > _IDS:
                ids.discard(self._order.popleft())
        self._seq += 1
        calls = self._calls
        if call is not None:
            old = calls.get(key)
            calls[key] = (old[0] if old is not None else self._seq, call)  # a key put again keeps its place
            if len(calls) > self._prune_at:  # entries `get` no longer answers with are dropped now and then
                seq, size = self._seq, self._size
                self._calls = calls = {k: e for k, e in calls.items() if _joinable(seq - e[0], size, e[1])}
                self._prune_at = _next_prune(len(calls))
        elif key in calls:
            del calls[key]

    def get(self, key: str) -> ToolCall | None:
        entry = self._calls.get(key)
        if entry is None:
            return None
        return entry[1] if _joinable(self._seq - entry[0], self._size, entry[1]) else None


@mypyc_attr(allow_interpreted_subclasses=True)  # (so pickle can make and fill one: spiral/pickling.py)
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
